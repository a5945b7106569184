// The parseBatch measurement of bench/wire.ts. Run as a script with --jitless, it first switches
// Zod to its jitless mode — what workerd gets, since Cloudflare forbids `new Function` — then loads
// the schemas and prints its measurements as JSON, for bench/wire.ts to read.
import { callEnvelope } from "./inputs.ts";
import { type Measurement, measure } from "./measure.ts";

export const BENCH_NOW_MS = Date.UTC(2026, 10, 29, 12, 0, 0);

export async function measureParseBatch(): Promise<{ jsonParse: Measurement; parseBatch: Measurement; kept: number }> {
  const { parseBatch } = await import("../../src/shared/index.ts");
  const body = callEnvelope(500, BENCH_NOW_MS);
  const check = parseBatch(JSON.parse(body), BENCH_NOW_MS);
  if (!check.ok || check.dropped.length > 0) throw new Error("the benchmark envelope must be valid");
  return {
    jsonParse: measure("JSON.parse", () => JSON.parse(body), { samples: 21 }),
    parseBatch: measure("JSON.parse + parseBatch", () => parseBatch(JSON.parse(body), BENCH_NOW_MS), { samples: 21 }),
    kept: check.payloads.length,
  };
}

if (process.argv.includes("--jitless")) {
  const { z } = await import("zod");
  z.config({ jitless: true });
  console.log(JSON.stringify(await measureParseBatch()));
}
