// parseCallFast, the hand-written twin of callPayloadSchema on the ingest hot path: for every
// input it accepts it must return exactly the schema's output, and it must accept every call the
// schema accepts (or the fast path would silently stop being used).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  callPayloadSchema,
  MAX_BYTE_COUNT,
  MAX_CLIENT_NAME_CHARS,
  MAX_DURATION_MS,
  MAX_SESSION_ID_CHARS,
  MAX_TOOL_NAME_CHARS,
  parseCallFast,
} from "../../src/shared/index.ts";

const ABSENT = Symbol("absent");

/** Values around each rule: valid, at and past the limits, wrong types, null, absent. */
const wrongTypes = [null, true, 0, "", [], {}, ABSENT] as const;
const text = (max: number) =>
  fc.oneof(
    fc.constantFrom("s", "claude-desktop", "x".repeat(max), "x".repeat(max + 1), "🚀".repeat(max), "🚀".repeat(max + 1), "\ud800", "", " "),
    fc.string({ unit: "grapheme", maxLength: 8 }),
    fc.constantFrom(...wrongTypes),
  );
const whole = (max: number) =>
  fc.oneof(
    fc.constantFrom(0, -0, 1, max - 1, max, max + 1, -1, 1.5, 1e21, Number.NaN, Infinity, "5", null, false, ABSENT),
    fc.integer({ min: 0, max }),
  );
const fields = {
  v: fc.constantFrom(1, 1.0, 2, 0, "1", null, ABSENT),
  type: fc.constantFrom("call", "startup", "CALL", null, ABSENT),
  session_id: text(MAX_SESSION_ID_CHARS),
  client_name: text(MAX_CLIENT_NAME_CHARS),
  tool_name: text(MAX_TOOL_NAME_CHARS),
  started_at: fc.oneof(
    fc.constantFrom(
      "2026-11-29T12:00:00Z",
      "2026-11-29T12:00:00.123456789+01:00",
      "2026-02-29T00:00:00Z",
      "2026-11-29T12:00:00",
      "2026-11-29T24:00:00Z",
      "2026-11-29T12:00:00.0000000000Z",
      1795953600000,
      null,
      ABSENT,
    ),
    fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
  ),
  duration_ms: whole(MAX_DURATION_MS),
  outcome: fc.constantFrom("ok", "bad_args", "tool_error", "crashed", "timeout", "OK", null, ABSENT),
  response_bytes: whole(MAX_BYTE_COUNT),
  is_empty: fc.constantFrom(true, false, "true", 0, null, ABSENT),
  args_hash: fc.oneof(
    fc.constantFrom("44136fa355b3", "abcd", "abc", "f".repeat(64), "f".repeat(65), "ABCDEF012345", "0123456789ag", "", 123, ABSENT),
    fc.stringMatching(/^[0-9a-f]{4,64}$/),
  ),
  client_version: text(64),
  server_version: text(64),
  protocol_version: fc.constantFrom("2025-06-18", "", "x".repeat(64), "x".repeat(65), "🚀".repeat(65), null, 7, ABSENT),
  session_kind: fc.constantFrom("key", "conversation", "transport", "connection", "none", "unknown", "cookie", "", null, 1, {}, ABSENT),
  transport: fc.constantFrom("stdio", "http", "sse", "unknown", "streamable-http", "", null, false, ABSENT),
  extra: fc.constantFrom(ABSENT, "unknown key", { nested: true }),
};

const items = fc.record(fields).map((record) => {
  const item: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(record)) if (value !== ABSENT) item[key] = value;
  return item;
});

/** Mostly-valid items: one field at a time from the generators above, the rest valid. */
const valid = {
  v: 1,
  type: "call",
  session_id: "s_0123456789ab",
  client_name: "cursor",
  tool_name: "search",
  started_at: "2026-11-29T12:00:00.5Z",
  duration_ms: 10,
  outcome: "ok",
  response_bytes: 20,
  is_empty: false,
  args_hash: "44136fa355b3",
};
const nearlyValid = fc
  .constantFrom(...(Object.keys(fields) as (keyof typeof fields)[]))
  .chain((key) => (fields[key] as fc.Arbitrary<unknown>).map((value) => ({ key, value })))
  .map(({ key, value }) => {
    const item: Record<string, unknown> = { ...valid };
    if (value === ABSENT) delete item[key];
    else item[key] = value;
    return item;
  });

function agreesWithSchema(item: Record<string, unknown>): void {
  const fast = parseCallFast(item);
  const schema = callPayloadSchema.safeParse(item);
  if (fast !== undefined) {
    expect(schema.success).toBe(true);
    expect(fast).toStrictEqual(schema.data);
    expect(Object.keys(fast)).toEqual(Object.keys(schema.data!));
  }
  expect(fast !== undefined).toBe(schema.success);
}

describe("parseCallFast agrees with callPayloadSchema", () => {
  it("on items near the valid one (one field varied)", () => {
    fc.assert(fc.property(nearlyValid, agreesWithSchema), { numRuns: 3000 });
  });

  it("on items with every field varied", () => {
    fc.assert(fc.property(items, agreesWithSchema), { numRuns: 3000 });
  });

  it("on the Go-style payload and the limits", () => {
    const go: Record<string, unknown> = { ...valid, started_at: "2026-11-29T12:59:30.123456789+01:00" };
    delete go.duration_ms;
    delete go.response_bytes;
    delete go.is_empty;
    for (const item of [
      valid,
      go,
      { ...valid, duration_ms: -0 },
      { ...valid, duration_ms: MAX_DURATION_MS },
      { ...valid, duration_ms: MAX_DURATION_MS + 1 },
      { ...valid, response_bytes: MAX_BYTE_COUNT },
      { ...valid, response_bytes: MAX_BYTE_COUNT + 1 },
      { ...valid, is_empty: true },
      { ...valid, is_empty: true, outcome: "crashed" },
      { ...valid, client_name: "🚀".repeat(MAX_CLIENT_NAME_CHARS) },
      { ...valid, client_name: "🚀".repeat(MAX_CLIENT_NAME_CHARS + 1) },
    ]) {
      agreesWithSchema(item);
    }
    expect(parseCallFast(go)).toMatchObject({ duration_ms: 0, response_bytes: 0, is_empty: false });
  });
});
