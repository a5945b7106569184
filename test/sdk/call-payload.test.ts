// The request body the SDK sends is exactly JSON.stringify({ batch }), whatever the payloads hold.
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { batchJson, CallPayload } from "../../src/sdk/call-payload.ts";

/** Any text: quotes, backslashes, controls, lone surrogates, astral characters. */
const anyText = fc.oneof(
  fc.string({ unit: "binary", maxLength: 24 }),
  fc.constantFrom("", '"', "\\", "\u0000", "\u001f", "\ud800", "\udfff", "😀", "s_0123456789ab", "claude-ai", "é"),
);
const version = fc.oneof(fc.constant(null), anyText);
const count = fc.oneof(fc.nat(), fc.constantFrom(0, -0, 86_400_000, 2 ** 53 - 1), fc.double({ noNaN: true, noDefaultInfinity: true }));

const callPayload = fc
  .record({
    session: fc.oneof(fc.constantFrom("s_0123456789ab", ""), anyText),
    client: fc.oneof(fc.constant("claude-ai"), anyText),
    tool: fc.oneof(fc.constant("search"), anyText),
    startedAt: fc.oneof(fc.constant("2026-12-08T01:02:03.456Z"), anyText),
    duration: count,
    outcome: fc.oneof(fc.constantFrom("ok", "bad_args", "tool_error", "crashed"), anyText),
    bytes: count,
    empty: fc.boolean(),
    hash: fc.oneof(fc.constantFrom("", "0123456789ab", "000000000000"), anyText),
    clientVersion: version,
    serverVersion: version,
    protocolVersion: version,
    kind: fc.oneof(fc.constantFrom("key", "conversation", "transport", "connection", "none"), anyText),
    transport: fc.oneof(fc.constantFrom("stdio", "streamable-http", "in-memory"), anyText),
  })
  .map((f) => {
    const payload = new CallPayload(f.session, f.client, f.tool, f.startedAt, f.duration, f.outcome, f.bytes, f.empty, f.clientVersion, f.serverVersion, f.protocolVersion, f.kind, f.transport);
    payload.args_hash = f.hash;
    return payload;
  });

/** Other payloads the buffer holds: startups, agreement verdicts, anything JSON.stringify takes. */
const otherPayload = fc.oneof(
  fc.record({ v: fc.constant(1), type: fc.constant("startup"), session_id: anyText, tools: fc.array(fc.record({ name: anyText })) }),
  fc.jsonValue().filter((value): value is object => typeof value === "object" && value !== null),
);

describe("batchJson", () => {
  test("is JSON.stringify({ batch }) for any mix of call payloads and others", () => {
    fc.assert(
      fc.property(fc.array(fc.oneof({ weight: 4, arbitrary: callPayload }, { weight: 1, arbitrary: otherPayload }), { maxLength: 40 }), (batch) => {
        expect(batchJson(batch)).toBe(JSON.stringify({ batch }));
      }),
      { numRuns: 500 },
    );
  });

  test("calls of one session in a row, then another session, then the first again: each written with its own members", () => {
    const call = (session: string, tool: string, clientVersion: string | null) =>
      new CallPayload(session, "claude-ai", tool, "2026-12-08T01:02:03.456Z", 12, "ok", 57, false, clientVersion, "1.0.0", "2026-07-28", "conversation", "stdio");
    const batch = [call("s_a", "search", "1.0"), call("s_a", "search", "1.0"), call("s_b", "search", "1.0"), call("s_b", "fetch", null), call("s_a", "search", "1.0")];
    expect(batchJson(batch)).toBe(JSON.stringify({ batch }));
    expect(JSON.parse(batchJson(batch)).batch.map((p: { session_id: string; tool_name: string }) => `${p.session_id}/${p.tool_name}`)).toEqual([
      "s_a/search",
      "s_a/search",
      "s_b/search",
      "s_b/fetch",
      "s_a/search",
    ]);
  });

  test("calls that differ from the one before in a single shared member each keep their own value", () => {
    const fields = ["s_a", "claude-ai", "search", "2026-12-08T01:02:03.456Z", 12, "ok", 57, false, "1.0", "1.0.0", "2026-07-28", "conversation", "stdio"] as const;
    const make = (at: number, value: string | null) => {
      const args = [...fields] as unknown[];
      args[at] = value;
      return new CallPayload(...(args as ConstructorParameters<typeof CallPayload>));
    };
    // The members calls share: session, client, tool (0–2); client, server and protocol versions, kind, transport (8–12).
    for (const at of [0, 1, 2, 8, 9, 10, 11, 12]) {
      for (const value of ["other", null]) {
        if (value === null && at < 8) continue;
        const batch = [make(at, fields[at] as string), make(at, value), make(at, fields[at] as string)];
        expect(batchJson(batch)).toBe(JSON.stringify({ batch }));
      }
    }
  });

  test("a member given a value of another type than declared is written as JSON.stringify writes it", () => {
    const payload = new CallPayload("s_a", "c", "t", "2026-12-08T01:02:03.456Z", Number.NaN, "ok", Number.POSITIVE_INFINITY, false, null, null, null, "none", "stdio");
    const odd = Object.assign(new CallPayload("s_a", "c", "t", "x", 1, "ok", 2, true, null, null, null, "none", "stdio"), { client_version: undefined as unknown as null });
    for (const batch of [[payload], [odd], [payload, odd]]) expect(batchJson(batch)).toBe(JSON.stringify({ batch }));
  });

  test("an empty batch", () => {
    expect(batchJson([])).toBe('{"batch":[]}');
  });
});
