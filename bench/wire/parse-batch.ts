// The parseBatch measurement of bench/wire.ts. Run as a script with --jitless, it first switches
// Zod to its jitless mode — what workerd gets, since Cloudflare forbids `new Function` — then loads
// the schemas and prints its measurements as JSON, for bench/wire.ts to read.
import { callEnvelope } from "./inputs.ts";
import { type Measurement, measure } from "./measure.ts";

export const BENCH_NOW_MS = Date.UTC(2026, 10, 29, 12, 0, 0);

export type ParseBatchMeasurements = {
  jsonParse: Measurement;
  parseBatch: Measurement;
  schemaOnly: Measurement;
  kept: number;
};

export async function measureParseBatch(): Promise<ParseBatchMeasurements> {
  const { callPayloadSchema, parseBatch } = await import("../../src/shared/index.ts");
  const body = callEnvelope(500, BENCH_NOW_MS);
  const check = parseBatch(JSON.parse(body), BENCH_NOW_MS);
  if (!check.ok || check.dropped.length > 0) throw new Error("the benchmark envelope must be valid");
  return {
    jsonParse: measure("JSON.parse", () => JSON.parse(body), { samples: 21 }),
    parseBatch: measure("JSON.parse + parseBatch", () => parseBatch(JSON.parse(body), BENCH_NOW_MS), { samples: 21 }),
    // What parseBatch costs without its call fast path: the Zod schema on every item.
    schemaOnly: measure(
      "JSON.parse + callPayloadSchema per item",
      () => {
        const { batch } = JSON.parse(body) as { batch: unknown[] };
        for (const item of batch) callPayloadSchema.safeParse(item);
      },
      { samples: 21 },
    ),
    kept: check.payloads.length,
  };
}

if (process.argv.includes("--jitless")) {
  const { z } = await import("zod");
  z.config({ jitless: true });
  console.log(JSON.stringify(await measureParseBatch()));
}
