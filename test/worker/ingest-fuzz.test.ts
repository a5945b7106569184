// Property-based fuzz of POST /v1/ingest (issue 3): random and malformed bodies never produce a
// 5xx, and every stored row is valid — exactly the items the shared contract accepts, nothing else.
import { env } from "cloudflare:test";
import fc from "fast-check";
import { expect, it } from "vitest";
import { HASH_PATTERN, parseBatch, type Payload } from "../../src/shared/index.ts";
import { durationBucket } from "../../src/worker/histogram.ts";
import { agreementPayload, callPayload, isoAgo, postIngest, startupPayload, storedRows } from "./helpers/ingest.ts";
import { createProject, setPayloadBudget } from "./helpers/projects.ts";

type Json = Record<string, unknown>;

// Values a producer might plausibly get wrong: wrong types, edge numbers, long and odd strings.
const oddValue = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.constantFrom(-1, 0, 1.5, 2_147_483_648, 86_400_001, Number.MAX_SAFE_INTEGER, "", "ok", "OK", true, null),
  fc.string({ unit: "binary", maxLength: 260 }),
  fc.constantFrom(isoAgo(1000), isoAgo(8 * 86_400_000), "2026-13-01T00:00:00Z", "yesterday", new Date(Date.now() + 3_600_000).toISOString()),
);

/** A valid payload with up to three fields replaced, deleted or added. */
const mutatedPayload = fc
  .tuple(
    fc.constantFrom<() => Json>(callPayload, startupPayload, agreementPayload),
    fc.array(fc.tuple(fc.constantFrom("set", "delete", "add"), fc.nat(20), oddValue, fc.string({ maxLength: 12 })), { maxLength: 3 }),
  )
  .map(([make, edits]) => {
    const payload = make();
    const keys = Object.keys(payload);
    for (const [op, index, value, newKey] of edits) {
      const key = keys[index % keys.length]!;
      if (op === "set") payload[key] = value;
      else if (op === "delete") delete payload[key];
      else payload[newKey || "extra"] = value;
    }
    return payload;
  });

const item = fc.oneof({ weight: 4, arbitrary: mutatedPayload }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) });

const body = fc.oneof(
  { weight: 6, arbitrary: fc.array(item, { maxLength: 12 }).map((batch) => JSON.stringify({ batch })) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)) },
  { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 200 }) },
  { weight: 1, arbitrary: fc.array(item, { maxLength: 4 }).map((batch) => JSON.stringify({ batch }).slice(0, -3)) },
);

it("never answers 5xx and stores exactly the valid items", { timeout: 60_000 }, async () => {
  const p = await createProject("fuzz");
  await setPayloadBudget(p.project_id, 100_000_000);
  const accepted: Payload[] = [];
  await fc.assert(
    fc.asyncProperty(body, async (text) => {
      const res = await postIngest(text, { key: p.ingest_key });
      expect([202, 400, 413]).toContain(res.status);
      if (res.status !== 202) {
        const error = await res.json<{ error: string; code: string }>();
        expect(Object.keys(error)).toEqual(["error", "code", "request_id"]);
        return;
      }
      expect(await res.text()).toBe("");
      const parsed = parseBatch(JSON.parse(text), Date.now());
      if (parsed.ok) accepted.push(...parsed.payloads);
    }),
    { numRuns: 150, seed: 20261129 },
  );

  const rows = await storedRows(p.project_id);
  const calls = accepted.filter((x) => x.type === "call");
  const startups = accepted.filter((x) => x.type === "startup");
  const agreements = accepted.filter((x) => x.type === "agreement");
  expect(rows.calls).toHaveLength(calls.length);
  expect(rows.startups).toHaveLength(startups.length);
  expect(rows.agreements).toHaveLength(agreements.length);
  expect(calls.length).toBeGreaterThan(20); // the generator does produce valid items

  // Independent checks of every stored row against SPEC §1.2.
  const weekAgo = Date.now() - 7 * 86_400_000 - 60_000;
  rows.calls.forEach((row, i) => {
    expect(["ok", "bad_args", "tool_error", "crashed"]).toContain(row.outcome);
    expect(row.is_empty === 0 || (row.is_empty === 1 && row.outcome === "ok")).toBe(true);
    expect(String(row.args_hash)).toMatch(HASH_PATTERN);
    for (const [field, max] of [["session_id", 128], ["client_name", 128], ["tool_name", 200]] as const) {
      // A string within its cap; "" included (SPEC §1.2 caps length only).
      expect(typeof row[field]).toBe("string");
      expect([...String(row[field])].length).toBeLessThanOrEqual(max);
    }
    expect(row.duration_ms as number).toBeGreaterThanOrEqual(0);
    expect(row.duration_ms as number).toBeLessThanOrEqual(86_400_000);
    expect(row.duration_bucket).toBe(durationBucket(row.duration_ms as number));
    expect(row.started_at_ms as number).toBeGreaterThan(weekAgo);
    expect(row.started_at_ms as number).toBeLessThan(Date.now() + 5 * 60_000);
    // The stored row is the accepted payload, field for field, in receive order.
    const call = calls[i]!;
    expect(row).toMatchObject({ session_id: call.session_id, client_name: call.client_name, tool_name: call.tool_name, outcome: call.outcome, args_hash: call.args_hash, duration_ms: call.duration_ms, response_bytes: call.response_bytes });
  });
  for (const row of rows.startups) {
    for (const tool of JSON.parse(String(row.tools_json)) as Json[]) {
      expect(Object.keys(tool)).toEqual(["name", "schema_bytes", "schema_hash", "description_hash", "description_norm", "policy"]);
    }
  }
  const stored = JSON.stringify(rows);
  expect(stored).not.toContain('"extra"');
  const unknownKeys = await env.DB.prepare("SELECT COUNT(*) AS n FROM call_batches b, json_each(b.calls_json) AS j WHERE b.project_id = ?1 AND j.value ->> 5 NOT IN ('ok','bad_args','tool_error','crashed')").bind(p.project_id).first<{ n: number }>();
  expect(unknownKeys?.n).toBe(0);
});
