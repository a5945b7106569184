// parseBatch (SPEC §1.1): envelope errors as 400/413, items validated one by one, dropped items
// reported by index with a short reason, good items kept in order.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ingestEnvelopeSchema, MAX_BATCH_ITEMS, MAX_BODY_BYTES, parseBatch } from "../../src/shared/index.ts";

const NOW = Date.UTC(2026, 10, 29, 12, 0, 0);

const call = (i: number, overrides: Record<string, unknown> = {}) => ({
  v: 1,
  type: "call",
  session_id: "s_0123456789ab",
  client_name: "cursor",
  tool_name: `tool_${i}`,
  started_at: "2026-11-29T11:59:59.000001Z",
  duration_ms: i,
  outcome: "ok",
  response_bytes: 10,
  is_empty: false,
  args_hash: "44136fa355b3",
  ...overrides,
});

describe("parseBatch envelope", () => {
  it.each([
    ["null", null],
    ["an array", [call(0)]],
    ["a string", "batch"],
    ["a number", 42],
    ["undefined", undefined],
    ["a boolean", true],
  ])("answers 400 when the body is %s", (_name, body) => {
    expect(parseBatch(body, NOW)).toEqual({ ok: false, status: 400, error: "body must be a JSON object" });
  });

  it.each([
    ["missing", {}],
    ["an object", { batch: { 0: call(0) } }],
    ["a string", { batch: "[]" }],
    ["null", { batch: null }],
  ])("answers 400 when batch is %s", (_name, body) => {
    expect(parseBatch(body, NOW)).toEqual({ ok: false, status: 400, error: "batch must be an array" });
  });

  it("accepts 0, 999 and 1,000 items and answers 413 for 1,001 (SPEC §1.1)", () => {
    const batch = (n: number) => ({ batch: Array.from({ length: n }, (_, i) => call(i)) });
    expect(parseBatch(batch(0), NOW)).toEqual({ ok: true, payloads: [], dropped: [] });
    const at999 = parseBatch(batch(MAX_BATCH_ITEMS - 1), NOW);
    expect(at999.ok && at999.payloads.length).toBe(999);
    const at1000 = parseBatch(batch(MAX_BATCH_ITEMS), NOW);
    expect(at1000.ok && at1000.payloads.length).toBe(1000);
    expect(parseBatch(batch(MAX_BATCH_ITEMS + 1), NOW)).toEqual({ ok: false, status: 413, error: "batch has more than 1000 items" });
    // Invalid items still count towards the 1,000.
    expect(parseBatch({ batch: Array.from({ length: 1001 }, () => null) }, NOW)).toMatchObject({ ok: false, status: 413 });
    const invalid1000 = parseBatch({ batch: Array.from({ length: 1000 }, () => null) }, NOW);
    expect(invalid1000.ok && invalid1000.dropped.length).toBe(1000);
  });

  it("ignores other envelope keys", () => {
    expect(parseBatch({ batch: [call(1)], sdk: "x" }, NOW)).toMatchObject({ ok: true, dropped: [] });
  });

  it("exports the envelope limits and schema", () => {
    expect(MAX_BATCH_ITEMS).toBe(1_000);
    expect(MAX_BODY_BYTES).toBe(1_048_576);
    expect(ingestEnvelopeSchema.safeParse({ batch: new Array(1000).fill(null) }).success).toBe(true);
    expect(ingestEnvelopeSchema.safeParse({ batch: new Array(1001).fill(null) }).success).toBe(false);
  });
});

describe("parseBatch items", () => {
  it("keeps the good items in order and reports each dropped one by index", () => {
    const result = parseBatch(
      {
        batch: [
          call(0),
          call(1, { v: 2 }),
          { v: 1, type: "startup", session_id: "s_1", client_name: "c", tools: [{ name: "t", schema_bytes: 5, junk: 1 }] },
          "not an object",
          call(4, { is_empty: true, outcome: "tool_error" }),
          call(5, { started_at: "2026-11-01T00:00:00Z" }),
          { v: 1, type: "agreement", session_id: "s", field: "f", tool_a: "a", tool_b: "b", agreed: false, checked_at: "2026-11-29T12:00:00Z", window_ms: 1 },
          call(7, { tool_name: "t".repeat(201) }),
          call(8),
        ],
      },
      NOW,
    );
    if (!result.ok) throw new Error("envelope refused");
    expect(result.payloads.map((p) => p.type)).toEqual(["call", "startup", "agreement", "call"]);
    expect(result.payloads.map((p) => (p.type === "call" ? p.tool_name : p.type))).toEqual(["tool_0", "startup", "agreement", "tool_8"]);
    expect(result.dropped).toEqual([
      { index: 1, reason: "v: must be 1" },
      { index: 3, reason: "not an object" },
      { index: 4, reason: "is_empty: true only with outcome ok" },
      { index: 5, reason: "started_at: more than 7 days old" },
      { index: 7, reason: "tool_name: too long" },
    ]);
    expect(result.payloads[1]).toEqual({
      v: 1,
      type: "startup",
      session_id: "s_1",
      client_name: "c",
      tools: [{ name: "t", schema_bytes: 5, schema_hash: null, description_hash: null, description_norm: null, policy: null }],
      sdk: null,
      mcp_sdk_version: null,
      transport: null,
      protocol_version: null,
      agree_declared: [],
    });
  });

  it("never returns unknown keys, whatever the payload carries: the item is kept with exactly its listed fields", () => {
    const body = JSON.parse(JSON.stringify({ batch: [call(0, { __proto__x: 1, arguments: { q: "secret" } })] }));
    const result = parseBatch(body, NOW);
    if (!result.ok) throw new Error("the envelope is valid");
    expect(result.dropped).toEqual([]);
    expect(result.payloads).toHaveLength(1);
    // Exactly what the same call without the two unknown keys gives.
    const clean = parseBatch({ batch: [call(0)] }, NOW);
    expect(clean.ok && clean.payloads[0]).toMatchObject({ type: "call", tool_name: "tool_0", session_id: "s_0123456789ab" });
    expect(result.payloads[0]).toEqual(clean.ok ? clean.payloads[0] : undefined);
    expect(JSON.stringify(result)).not.toContain("secret");
  });

  it("handles a body parsed from JSON with a __proto__ key", () => {
    const body = JSON.parse('{"batch":[{"__proto__":{"v":1},"type":"call"}]}');
    expect(parseBatch(body, NOW)).toEqual({ ok: true, payloads: [], dropped: [{ index: 0, reason: "v: missing" }] });
  });
});

describe("parseBatch on generated input", () => {
  const callKeys = ["v", "type", "session_id", "client_name", "tool_name", "started_at", "duration_ms", "outcome", "response_bytes", "is_empty", "args_hash"];
  const startupKeys = ["tools", "sdk", "mcp_sdk_version", "transport", "protocol_version", "agree_declared", "name", "schema_bytes", "policy", "field"];

  it("never throws, and accounts for every item exactly once", () => {
    const item = fc.oneof(
      fc.jsonValue(),
      fc.record({ v: fc.constantFrom(1, 2), type: fc.constantFrom("call", "startup", "agreement", "x") }).chain((head) =>
        fc.dictionary(fc.constantFrom(...callKeys, ...startupKeys), fc.jsonValue()).map((rest) => ({ ...rest, ...head })),
      ),
      fc.constantFrom(...Array.from({ length: 5 }, (_, i) => call(i))),
    );
    fc.assert(
      fc.property(fc.oneof(fc.jsonValue(), fc.record({ batch: fc.array(item, { maxLength: 20 }) })), (body) => {
        const result = parseBatch(body, NOW);
        if (!result.ok) return;
        const batch = (body as { batch: unknown[] }).batch;
        expect(result.payloads.length + result.dropped.length).toBe(batch.length);
        const indexes = result.dropped.map((d) => d.index);
        expect(new Set(indexes).size).toBe(indexes.length);
      }),
      { numRuns: 1000 },
    );
  });

  it("never echoes a value in a dropped item's reason", () => {
    const SENTINEL = "Zq7SENTINELvalue";
    const poisoned = fc
      .tuple(fc.constantFrom(...callKeys, ...startupKeys), fc.constantFrom(SENTINEL, [SENTINEL], { [SENTINEL]: SENTINEL }, SENTINEL.repeat(30)))
      .chain(([key, value]) =>
        fc.constantFrom(
          { ...call(0), [key]: value },
          { v: 1, type: "startup", session_id: "s", client_name: "c", tools: [{ name: "t", schema_bytes: 1, [key]: value }], [key]: value },
          { v: 1, type: "agreement", session_id: "s", field: "f", tool_a: "a", tool_b: "b", agreed: true, checked_at: "2026-11-29T12:00:00Z", window_ms: 1, [key]: value },
        ),
      );
    fc.assert(
      fc.property(fc.array(poisoned, { minLength: 1, maxLength: 10 }), (batch) => {
        const result = parseBatch({ batch }, NOW);
        expect(result.ok).toBe(true);
        expect(JSON.stringify(result.ok ? result.dropped : result)).not.toContain("SENTINEL");
      }),
      { numRuns: 500 },
    );
  });
});
