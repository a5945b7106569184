// The three payload types (SPEC §1.2) through parsePayload, the validation parseBatch applies to
// each item: every cap at, just under and just over its limit, defaults, stripping, the window.
import { describe, expect, expectTypeOf, it } from "vitest";
import {
  type AgreementPayload,
  type CallPayload,
  type CallPayloadInput,
  MAX_AGREE_DECLARED_FIELDS,
  MAX_AGREE_DECLARED_TOOLS,
  MAX_AGREEMENT_FIELD_CHARS,
  MAX_AGREEMENT_WINDOW_MS,
  MAX_BYTE_COUNT,
  MAX_CLIENT_NAME_CHARS,
  MAX_DURATION_MS,
  MAX_FUTURE_MS,
  MAX_MCP_SDK_VERSION_CHARS,
  MAX_PAST_MS,
  MAX_PROTOCOL_VERSION_CHARS,
  MAX_SDK_CHARS,
  MAX_SESSION_ID_CHARS,
  MAX_STARTUP_TOOLS,
  MAX_TOOL_NAME_CHARS,
  parsePayload,
  type Payload,
  payloadSchema,
  type StartupPayload,
  type StartupPayloadInput,
} from "../../src/shared/index.ts";

const NOW = Date.UTC(2026, 10, 29, 12, 0, 0);
const NOW_ISO = "2026-11-29T12:00:00Z";

const call = (overrides: Record<string, unknown> = {}): Record<string, unknown> => ({
  v: 1,
  type: "call",
  session_id: "s_0123456789ab",
  client_name: "claude-desktop",
  tool_name: "search_orders",
  started_at: "2026-11-29T11:59:00.250Z",
  duration_ms: 240,
  outcome: "ok",
  response_bytes: 1420,
  is_empty: false,
  args_hash: "9c1b4e2f0a11",
  ...overrides,
});

const tool = (overrides: Record<string, unknown> = {}): Record<string, unknown> => ({
  name: "search_orders",
  schema_bytes: 480,
  schema_hash: "44136fa355b3",
  description_hash: "e3b0c44298fc",
  description_norm: "e3b0c44298fc",
  policy: null,
  ...overrides,
});

const startup = (overrides: Record<string, unknown> = {}): Record<string, unknown> => ({
  v: 1,
  type: "startup",
  session_id: "s_0123456789ab",
  client_name: "claude-desktop",
  tools: [tool()],
  sdk: "mcpulse-edge/0.1.0",
  mcp_sdk_version: "1.32.0",
  transport: "stdio",
  protocol_version: "2025-06-18",
  agree_declared: [{ field: "total", tools: ["a", "b"] }],
  ...overrides,
});

const agreement = (overrides: Record<string, unknown> = {}): Record<string, unknown> => ({
  v: 1,
  type: "agreement",
  session_id: "s_0123456789ab",
  field: "order_total",
  tool_a: "get_order",
  tool_b: "get_invoice",
  agreed: true,
  checked_at: "2026-11-29T11:58:00+00:00",
  window_ms: 300_000,
  ...overrides,
});

function kept(item: unknown): Payload {
  const result = parsePayload(item, NOW);
  if (!result.ok) throw new Error(`expected the item to be kept, dropped: ${result.reason}`);
  return result.payload;
}

function droppedReason(item: unknown): string {
  const result = parsePayload(item, NOW);
  if (result.ok) throw new Error("expected the item to be dropped");
  return result.reason;
}

const repeat = (length: number, unit = "x") => unit.repeat(length);

describe("call", () => {
  it("parses to the stored shape, started_at becoming started_at_ms", () => {
    expect(kept(call())).toEqual({
      v: 1,
      type: "call",
      session_id: "s_0123456789ab",
      client_name: "claude-desktop",
      tool_name: "search_orders",
      started_at_ms: NOW - 60_000 + 250,
      duration_ms: 240,
      outcome: "ok",
      response_bytes: 1420,
      is_empty: false,
      args_hash: "9c1b4e2f0a11",
      client_version: null,
      server_version: null,
      protocol_version: null,
      session_kind: null,
      transport: null,
    });
  });

  it("keeps the descriptive fields (SPEC §1.2, for Analytics Engine) when sent", () => {
    expect(kept(call({ client_version: "0.14.2", server_version: "2.1.0", protocol_version: "2025-06-18", session_kind: "conversation", transport: "http" }))).toMatchObject({
      client_version: "0.14.2",
      server_version: "2.1.0",
      protocol_version: "2025-06-18",
      session_kind: "conversation",
      transport: "http",
    });
  });

  it.each(["key", "conversation", "transport", "connection", "none"])("keeps session_kind %s", (session_kind) => {
    expect(kept(call({ session_kind }))).toMatchObject({ session_kind });
  });

  it.each([
    ["another kind", "cookie", "unknown"],
    ["upper case", "KEY", "unknown"],
    ["a number", 3, "unknown"],
    ["an object", { kind: "key" }, "unknown"],
    ["null", null, null],
  ])("normalises session_kind (%s) instead of dropping the call", (_name, session_kind, stored) => {
    expect(kept(call({ session_kind }))).toMatchObject({ session_kind: stored });
  });

  it.each([
    ["streamable-http", "unknown"],
    ["HTTP", "unknown"],
    [42, "unknown"],
    ["sse", "sse"],
  ])("normalises transport %j to %j", (transport, stored) => {
    expect(kept(call({ transport }))).toMatchObject({ transport: stored });
  });

  it.each(["client_version", "server_version", "protocol_version"])("%s: 64 chars kept, 65 or a wrong type stored as not sent, never a drop", (field) => {
    expect(kept(call({ [field]: "🚀".repeat(64) }))).toMatchObject({ [field]: "🚀".repeat(64) });
    expect(kept(call({ [field]: "v".repeat(63) }))).toMatchObject({ [field]: "v".repeat(63) });
    for (const value of ["v".repeat(65), "🚀".repeat(65), "", 1.2, true, ["1"], null]) {
      expect(kept(call({ [field]: value }))).toMatchObject({ [field]: null });
    }
  });

  it("accepts the Go SDK's payload: zero values omitted, nanosecond timestamp with offset", () => {
    const go = call({ started_at: "2026-11-29T12:59:30.123456789+01:00" });
    delete go.duration_ms;
    delete go.response_bytes;
    delete go.is_empty;
    expect(kept(go)).toMatchObject({
      started_at_ms: NOW - 30_000 + 123.456,
      duration_ms: 0,
      response_bytes: 0,
      is_empty: false,
    });
  });

  it("strips unknown keys and never stores them", () => {
    const payload = kept(call({ arguments: { secret: 1 }, result: "text", extra: null }));
    expect(Object.keys(payload).sort()).toEqual(
      [
        "args_hash", "client_name", "client_version", "duration_ms", "is_empty", "outcome", "protocol_version", "response_bytes", "server_version",
        "session_id", "session_kind", "started_at_ms", "tool_name", "transport", "type", "v",
      ],
    );
  });

  it.each(["ok", "bad_args", "tool_error", "crashed"])("accepts outcome %s", (outcome) => {
    expect(kept(call({ outcome }))).toMatchObject({ outcome });
  });

  it.each([["unknown", "timeout"], ["upper case", "OK"], ["number", 1], ["null", null]])("drops outcome: %s", (_name, outcome) => {
    expect(droppedReason(call({ outcome }))).toMatch(/^outcome: /);
  });

  it("allows is_empty true only with outcome ok", () => {
    expect(kept(call({ is_empty: true, outcome: "ok" }))).toMatchObject({ is_empty: true });
    for (const outcome of ["bad_args", "tool_error", "crashed"]) {
      expect(kept(call({ is_empty: false, outcome }))).toMatchObject({ is_empty: false });
      expect(droppedReason(call({ is_empty: true, outcome }))).toBe("is_empty: true only with outcome ok");
    }
    expect(droppedReason(call({ is_empty: "true" }))).toBe("is_empty: wrong type");
    expect(droppedReason(call({ is_empty: 1 }))).toBe("is_empty: wrong type");
  });

  it.each(["session_id", "client_name", "tool_name", "started_at", "outcome", "args_hash"])("drops a call without %s", (field) => {
    const item = call();
    delete item[field];
    expect(droppedReason(item)).toBe(`${field}: missing`);
  });

  it("rejects a null in a defaulted field (only omission means zero)", () => {
    expect(droppedReason(call({ duration_ms: null }))).toBe("duration_ms: wrong type");
  });

  it("caps duration_ms at 86,400,000", () => {
    expect(kept(call({ duration_ms: MAX_DURATION_MS - 1 }))).toMatchObject({ duration_ms: MAX_DURATION_MS - 1 });
    expect(kept(call({ duration_ms: MAX_DURATION_MS }))).toMatchObject({ duration_ms: MAX_DURATION_MS });
    expect(droppedReason(call({ duration_ms: MAX_DURATION_MS + 1 }))).toBe("duration_ms: over its cap");
    expect(MAX_DURATION_MS).toBe(86_400_000);
  });

  it("caps response_bytes at 2,147,483,647", () => {
    expect(kept(call({ response_bytes: MAX_BYTE_COUNT - 1 }))).toMatchObject({ response_bytes: MAX_BYTE_COUNT - 1 });
    expect(kept(call({ response_bytes: MAX_BYTE_COUNT }))).toMatchObject({ response_bytes: MAX_BYTE_COUNT });
    expect(droppedReason(call({ response_bytes: MAX_BYTE_COUNT + 1 }))).toBe("response_bytes: over its cap");
    expect(MAX_BYTE_COUNT).toBe(2_147_483_647);
  });

  it.each(["duration_ms", "response_bytes"])("requires %s to be a whole number ≥ 0", (field) => {
    expect(kept(call({ [field]: 0 }))).toMatchObject({ [field]: 0 });
    expect(droppedReason(call({ [field]: -1 }))).toBe(`${field}: negative`);
    expect(droppedReason(call({ [field]: 1.5 }))).toBe(`${field}: not a whole number`);
    expect(droppedReason(call({ [field]: "5" }))).toBe(`${field}: wrong type`);
    expect(droppedReason(call({ [field]: 1e300 }))).toMatch(new RegExp(`^${field}: `));
  });

  it("caps session_id at 128 characters", () => {
    expect(kept(call({ session_id: repeat(MAX_SESSION_ID_CHARS - 1) }))).toBeTruthy();
    expect(kept(call({ session_id: repeat(MAX_SESSION_ID_CHARS) }))).toBeTruthy();
    expect(droppedReason(call({ session_id: repeat(MAX_SESSION_ID_CHARS + 1) }))).toBe("session_id: too long");
    // SPEC §1.2, §2.2: only a call may have an empty session_id (no session known).
    expect(kept(call({ session_id: "" }))).toMatchObject({ session_id: "" });
    expect(kept(call({ session_id: "s" }))).toMatchObject({ session_id: "s" });
    expect(droppedReason(call({ session_id: 7 }))).toBe("session_id: wrong type");
  });

  it("caps client_name at 128 characters, counted in code points", () => {
    expect(kept(call({ client_name: repeat(MAX_CLIENT_NAME_CHARS - 1) }))).toBeTruthy();
    expect(kept(call({ client_name: repeat(MAX_CLIENT_NAME_CHARS) }))).toBeTruthy();
    expect(droppedReason(call({ client_name: repeat(MAX_CLIENT_NAME_CHARS + 1) }))).toBe("client_name: too long");
    // 128 emoji are 256 UTF-16 units: a producer that cut to 128 characters is accepted.
    expect(kept(call({ client_name: repeat(MAX_CLIENT_NAME_CHARS, "🚀") }))).toBeTruthy();
    expect(droppedReason(call({ client_name: repeat(MAX_CLIENT_NAME_CHARS + 1, "🚀") }))).toBe("client_name: too long");
    // Empty describes nobody: kept, under the name the SDKs give a client that did not say.
    expect(kept(call({ client_name: "" }))).toMatchObject({ client_name: "unknown" });
    expect(kept(call({ client_name: "x" }))).toMatchObject({ client_name: "x" });
    expect(kept(call({ client_name: " " }))).toMatchObject({ client_name: " " });
  });

  it("keeps tool_name to 1–200 characters (SPEC §1.2)", () => {
    expect(kept(call({ tool_name: repeat(MAX_TOOL_NAME_CHARS - 1) }))).toBeTruthy();
    expect(kept(call({ tool_name: repeat(MAX_TOOL_NAME_CHARS) }))).toBeTruthy();
    expect(droppedReason(call({ tool_name: repeat(MAX_TOOL_NAME_CHARS + 1) }))).toBe("tool_name: too long");
    // The lower limit: one character is a name, none is not (it would be an invisible link).
    expect(kept(call({ tool_name: "x" }))).toMatchObject({ tool_name: "x" });
    expect(kept(call({ tool_name: "🚀" }))).toMatchObject({ tool_name: "🚀" });
    expect(droppedReason(call({ tool_name: "" }))).toBe("tool_name: empty");
  });

  it("requires args_hash to be 4–64 lowercase hex characters", () => {
    for (const ok of ["abcd", "0123456789ab", repeat(63, "f"), repeat(64, "f")]) expect(kept(call({ args_hash: ok }))).toBeTruthy();
    for (const bad of ["abc", repeat(65, "f"), "ABCDEF012345", "0123456789ag", "", " abcd", "abcd\n"]) {
      expect(droppedReason(call({ args_hash: bad }))).toBe("args_hash: bad format");
    }
    expect(droppedReason(call({ args_hash: 123456 }))).toBe("args_hash: wrong type");
  });

  it("drops an unparseable started_at and one outside the window", () => {
    expect(droppedReason(call({ started_at: "2026-02-30T00:00:00Z" }))).toBe("started_at: not an ISO 8601 date-time");
    expect(droppedReason(call({ started_at: 1795953600000 }))).toBe("started_at: wrong type");
    expect(droppedReason(call({ started_at: "2026-11-29T12:00:00.0000000000Z" }))).toMatch(/^started_at: /);
    const sevenDaysAgo = new Date(NOW - MAX_PAST_MS).toISOString();
    expect(kept(call({ started_at: sevenDaysAgo }))).toMatchObject({ started_at_ms: NOW - MAX_PAST_MS });
    expect(droppedReason(call({ started_at: "2026-11-22T11:59:59.999999Z" }))).toBe("started_at: more than 7 days old");
    expect(kept(call({ started_at: "2026-11-29T12:05:00Z" }))).toMatchObject({ started_at_ms: NOW + MAX_FUTURE_MS });
    expect(kept(call({ started_at: "2026-11-29T13:05:00+01:00" }))).toMatchObject({ started_at_ms: NOW + MAX_FUTURE_MS });
    expect(droppedReason(call({ started_at: "2026-11-29T12:05:00.000001Z" }))).toBe("started_at: more than 5 minutes in the future");
    expect(droppedReason(call({ started_at: "2026-11-29T07:05:01-05:00" }))).toBe("started_at: more than 5 minutes in the future");
  });
});

describe("v and type", () => {
  it("requires v to be exactly 1", () => {
    expect(kept(call({ v: 1.0 }))).toBeTruthy();
    expect(droppedReason(call({ v: 2 }))).toBe("v: must be 1");
    expect(droppedReason(call({ v: 0 }))).toBe("v: must be 1");
    expect(droppedReason(call({ v: "1" }))).toBe("v: must be 1");
    expect(droppedReason(call({ v: true }))).toBe("v: must be 1");
    expect(droppedReason(call({ v: undefined }))).toBe("v: missing");
  });

  it("drops unknown and missing types", () => {
    expect(droppedReason(call({ type: "heartbeat" }))).toBe("type: unknown");
    expect(droppedReason(call({ type: "CALL" }))).toBe("type: unknown");
    expect(droppedReason(call({ type: undefined }))).toBe("type: missing");
  });

  it.each([["null", null], ["array", [call()]], ["string", "call"], ["number", 1]])("drops an item that is a %s", (_name, item) => {
    expect(droppedReason(item)).toBe("not an object");
  });

  it("never echoes the value sent in a reason", () => {
    const secret = "SECRET-ARGUMENT-VALUE";
    for (const item of [
      call({ outcome: secret }),
      call({ args_hash: secret }),
      call({ started_at: secret }),
      call({ session_id: secret.repeat(20) }),
      call({ type: secret }),
      call({ v: secret }),
      startup({ tools: [tool({ name: secret.repeat(20) })] }),
      startup({ sdk: secret.repeat(20) }),
      agreement({ agreed: secret }),
    ]) {
      expect(droppedReason(item)).not.toContain("SECRET");
    }
  });
});

describe("startup", () => {
  it("parses to the stored shape", () => {
    expect(kept(startup())).toEqual({
      v: 1,
      type: "startup",
      session_id: "s_0123456789ab",
      client_name: "claude-desktop",
      tools: [
        {
          name: "search_orders",
          schema_bytes: 480,
          schema_hash: "44136fa355b3",
          description_hash: "e3b0c44298fc",
          description_norm: "e3b0c44298fc",
          policy: null,
        },
      ],
      sdk: "mcpulse-edge/0.1.0",
      mcp_sdk_version: "1.32.0",
      transport: "stdio",
      protocol_version: "2025-06-18",
      agree_declared: [{ field: "total", tools: ["a", "b"] }],
    });
  });

  it("fills absent optional fields with null and a missing tools / agree_declared with []", () => {
    const minimal = { v: 1, type: "startup", session_id: "s_1", client_name: "unknown" };
    expect(kept(minimal)).toEqual({
      ...minimal,
      tools: [],
      sdk: null,
      mcp_sdk_version: null,
      transport: null,
      protocol_version: null,
      agree_declared: [],
    });
    expect(kept(startup({ tools: [{ name: "t", schema_bytes: 0 }] }))).toMatchObject({
      tools: [{ name: "t", schema_bytes: 0, schema_hash: null, description_hash: null, description_norm: null, policy: null }],
    });
  });

  it("treats null like absent for optional fields", () => {
    const payload = kept(
      startup({ sdk: null, mcp_sdk_version: null, transport: null, protocol_version: null, agree_declared: null, tools: [tool({ schema_hash: null, description_hash: null, description_norm: null })] }),
    ) as StartupPayload;
    expect(payload).toMatchObject({ sdk: null, mcp_sdk_version: null, transport: null, protocol_version: null, agree_declared: [] });
    expect(payload.tools[0]).toMatchObject({ schema_hash: null, description_hash: null, description_norm: null });
    expect(droppedReason(startup({ tools: null }))).toBe("tools: wrong type");
  });

  it("strips unknown keys at every level", () => {
    const payload = kept(
      startup({
        description: "never stored",
        tools: [tool({ description: "never stored", inputSchema: {}, policy: { requires_authorization: true, requires_verified_identity: false, note: "x" } })],
        agree_declared: [{ field: "total", tools: ["a"], path: "result.total" }],
      }),
    ) as StartupPayload;
    expect(payload).not.toHaveProperty("description");
    expect(Object.keys(payload.tools[0]!).sort()).toEqual(["description_hash", "description_norm", "name", "policy", "schema_bytes", "schema_hash"]);
    expect(payload.tools[0]!.policy).toEqual({ requires_authorization: true, requires_verified_identity: false });
    expect(payload.agree_declared).toEqual([{ field: "total", tools: ["a"] }]);
  });

  it("requires both policy flags when a policy is given", () => {
    expect(kept(startup({ tools: [tool({ policy: { requires_authorization: false, requires_verified_identity: true } })] }))).toBeTruthy();
    expect(droppedReason(startup({ tools: [tool({ policy: { requires_authorization: true } })] }))).toBe("tools.0.policy.requires_verified_identity: missing");
    expect(droppedReason(startup({ tools: [tool({ policy: { requires_authorization: 1, requires_verified_identity: false } })] }))).toBe("tools.0.policy.requires_authorization: wrong type");
    expect(droppedReason(startup({ tools: [tool({ policy: true })] }))).toBe("tools.0.policy: wrong type");
  });

  it("drops the whole startup for one invalid tool entry", () => {
    const tools = [tool({ name: "a" }), tool({ name: "b", schema_bytes: -1 }), tool({ name: "c" })];
    expect(droppedReason(startup({ tools }))).toBe("tools.1.schema_bytes: negative");
    expect(droppedReason(startup({ tools: [tool(), "search"] }))).toBe("tools.1: wrong type");
    expect(droppedReason(startup({ tools: [tool({ name: undefined })] }))).toBe("tools.0.name: missing");
    expect(droppedReason(startup({ tools: [tool({ schema_bytes: undefined })] }))).toBe("tools.0.schema_bytes: missing");
    expect(droppedReason(startup({ tools: [tool({ schema_hash: "XYZ" })] }))).toBe("tools.0.schema_hash: bad format");
    expect(droppedReason(startup({ tools: [tool({ description_norm: "abc" })] }))).toBe("tools.0.description_norm: bad format");
  });

  it("caps session_id and client_name as on calls", () => {
    expect(kept(startup({ session_id: repeat(MAX_SESSION_ID_CHARS), client_name: repeat(MAX_CLIENT_NAME_CHARS) }))).toBeTruthy();
    expect(droppedReason(startup({ session_id: repeat(MAX_SESSION_ID_CHARS + 1) }))).toBe("session_id: too long");
    // A startup always belongs to a session: 1 character is kept, an empty one drops it.
    expect(kept(startup({ session_id: "s" }))).toBeTruthy();
    expect(droppedReason(startup({ session_id: "" }))).toBe("session_id: empty");
    expect(droppedReason(startup({ client_name: repeat(MAX_CLIENT_NAME_CHARS + 1) }))).toBe("client_name: too long");
    expect(droppedReason(startup({ client_name: undefined }))).toBe("client_name: missing");
    expect(kept(startup({ client_name: "" }))).toMatchObject({ client_name: "unknown" });
  });

  it("keeps a startup that lists a tool name twice (SPEC §1.2 drops a startup only for an invalid entry)", () => {
    const tools = [tool({ name: "a", schema_bytes: 1 }), tool({ name: "b" }), tool({ name: "a", schema_bytes: 2 })];
    const parsed = kept(startup({ tools })) as StartupPayload;
    expect(parsed.tools.map((t) => [t.name, t.schema_bytes])).toEqual([["a", 1], ["b", 480], ["a", 2]]);
  });

  it("caps tools at 500 entries", () => {
    const tools = (n: number) => Array.from({ length: n }, (_, i) => tool({ name: `tool_${i}` }));
    expect((kept(startup({ tools: tools(MAX_STARTUP_TOOLS - 1) })) as StartupPayload).tools).toHaveLength(499);
    expect((kept(startup({ tools: tools(MAX_STARTUP_TOOLS) })) as StartupPayload).tools).toHaveLength(500);
    expect(droppedReason(startup({ tools: tools(MAX_STARTUP_TOOLS + 1) }))).toBe("tools: too many entries");
  });

  it("caps tool names at 200 and schema_bytes at 2,147,483,647", () => {
    expect(kept(startup({ tools: [tool({ name: repeat(MAX_TOOL_NAME_CHARS - 1) })] }))).toBeTruthy();
    expect(kept(startup({ tools: [tool({ name: repeat(MAX_TOOL_NAME_CHARS) })] }))).toBeTruthy();
    expect(droppedReason(startup({ tools: [tool({ name: repeat(MAX_TOOL_NAME_CHARS + 1) })] }))).toBe("tools.0.name: too long");
    expect(kept(startup({ tools: [tool({ schema_bytes: MAX_BYTE_COUNT - 1 })] }))).toBeTruthy();
    expect(kept(startup({ tools: [tool({ schema_bytes: MAX_BYTE_COUNT })] }))).toBeTruthy();
    expect(droppedReason(startup({ tools: [tool({ schema_bytes: 1.5 })] }))).toBe("tools.0.schema_bytes: not a whole number");
    // Tool names are 1–200: an empty entry name is an invalid entry and drops the whole startup.
    expect(kept(startup({ tools: [tool({ name: "x" })] }))).toBeTruthy();
    expect(droppedReason(startup({ tools: [tool({ name: "" })] }))).toBe("tools.0.name: empty");
    expect(droppedReason(startup({ tools: [tool({ name: "a" }), tool({ name: "" })] }))).toBe("tools.1.name: empty");
    expect(droppedReason(startup({ tools: [tool({ schema_bytes: MAX_BYTE_COUNT + 1 })] }))).toBe("tools.0.schema_bytes: over its cap");
  });

  it.each([
    ["sdk", MAX_SDK_CHARS],
    ["mcp_sdk_version", MAX_MCP_SDK_VERSION_CHARS],
    ["protocol_version", MAX_PROTOCOL_VERSION_CHARS],
  ])("caps %s at 64 characters", (field, max) => {
    expect(max).toBe(64);
    expect(kept(startup({ [field]: repeat(max - 1) }))).toBeTruthy();
    expect(kept(startup({ [field]: repeat(max) }))).toMatchObject({ [field]: repeat(max) });
    expect(droppedReason(startup({ [field]: repeat(max + 1) }))).toBe(`${field}: too long`);
    expect(kept(startup({ [field]: "" }))).toMatchObject({ [field]: "" });
    expect(droppedReason(startup({ [field]: 1 }))).toBe(`${field}: wrong type`);
  });

  it.each(["stdio", "http", "sse", "unknown"])("accepts transport %s", (transport) => {
    expect(kept(startup({ transport }))).toMatchObject({ transport });
  });

  it("keeps a startup with any other transport string, stored as unknown (SPEC §1.2)", () => {
    for (const transport of ["streamable-http", "websocket", "HTTP", "", "x".repeat(10_000), "🚀"]) {
      const parsed = kept(startup({ transport })) as StartupPayload;
      expect(parsed.transport, transport).toBe("unknown");
      expect(parsed.tools.map((t) => t.name)).toEqual(["search_orders"]);
    }
    expect(payloadSchema.safeParse(startup({ transport: "streamable-http" })).data).toMatchObject({ transport: "unknown" });
    expect(kept(startup({ transport: null }))).toMatchObject({ transport: null });
    expect(kept(startup({ transport: undefined }))).toMatchObject({ transport: null });
  });

  it("still drops a transport that is not a string (a wrong type, SPEC §1.2)", () => {
    expect(droppedReason(startup({ transport: 1 }))).toBe("transport: wrong type");
    expect(droppedReason(startup({ transport: ["stdio"] }))).toBe("transport: wrong type");
  });

  it("caps agree_declared at 64 fields of at most 64 tools each, field names at 128 (SPEC §1.2)", () => {
    expect([MAX_AGREE_DECLARED_FIELDS, MAX_AGREE_DECLARED_TOOLS]).toEqual([64, 64]);
    const declared = (n: number, tools = ["a", "b"]) => Array.from({ length: n }, (_, i) => ({ field: `f${i}`, tools }));
    expect((kept(startup({ agree_declared: declared(MAX_AGREE_DECLARED_FIELDS - 1) })) as StartupPayload).agree_declared).toHaveLength(63);
    expect((kept(startup({ agree_declared: declared(MAX_AGREE_DECLARED_FIELDS) })) as StartupPayload).agree_declared).toHaveLength(64);
    expect(droppedReason(startup({ agree_declared: declared(MAX_AGREE_DECLARED_FIELDS + 1) }))).toBe("agree_declared: too many entries");
    const names = (n: number) => Array.from({ length: n }, (_, i) => `t${i}`);
    expect(kept(startup({ agree_declared: [{ field: "f", tools: names(MAX_AGREE_DECLARED_TOOLS - 1) }] }))).toBeTruthy();
    expect(kept(startup({ agree_declared: [{ field: "f", tools: names(MAX_AGREE_DECLARED_TOOLS) }] }))).toBeTruthy();
    expect(droppedReason(startup({ agree_declared: [{ field: "f", tools: names(MAX_AGREE_DECLARED_TOOLS + 1) }] }))).toBe("agree_declared.0.tools: too many entries");
    // Both caps at once: 64 × 64 is the largest declaration, kept; one more tool in the last field drops it.
    const full = declared(MAX_AGREE_DECLARED_FIELDS, names(MAX_AGREE_DECLARED_TOOLS));
    expect((kept(startup({ agree_declared: full })) as StartupPayload).agree_declared.flatMap((d) => d.tools)).toHaveLength(4096);
    const overLast = [...full.slice(0, -1), { field: "last", tools: names(MAX_AGREE_DECLARED_TOOLS + 1) }];
    expect(droppedReason(startup({ agree_declared: overLast }))).toBe("agree_declared.63.tools: too many entries");
    expect(kept(startup({ agree_declared: [{ field: repeat(MAX_AGREEMENT_FIELD_CHARS - 1), tools: [] }] }))).toBeTruthy();
    expect(kept(startup({ agree_declared: [{ field: repeat(MAX_AGREEMENT_FIELD_CHARS), tools: [] }] }))).toBeTruthy();
    expect(kept(startup({ agree_declared: [{ field: "f", tools: [repeat(MAX_TOOL_NAME_CHARS)] }] }))).toBeTruthy();
    expect(droppedReason(startup({ agree_declared: [{ field: repeat(MAX_AGREEMENT_FIELD_CHARS + 1), tools: [] }] }))).toBe("agree_declared.0.field: too long");
    expect(droppedReason(startup({ agree_declared: [{ field: "f", tools: [repeat(MAX_TOOL_NAME_CHARS + 1)] }] }))).toBe("agree_declared.0.tools.0: too long");
    expect(droppedReason(startup({ agree_declared: [{ field: "f" }] }))).toBe("agree_declared.0.tools: missing");
    // A declaration names a field and tools: empty ones are invalid entries, like an empty tool name.
    expect(droppedReason(startup({ agree_declared: [{ field: "", tools: ["a"] }] }))).toBe("agree_declared.0.field: empty");
    expect(droppedReason(startup({ agree_declared: [{ field: "f", tools: ["a", ""] }] }))).toBe("agree_declared.0.tools.1: empty");
    expect(kept(startup({ agree_declared: [{ field: "f", tools: ["a"] }] }))).toBeTruthy();
  });

  it("has no timestamp, so no window", () => {
    expect(parsePayload(startup(), NOW + 365 * 86_400_000).ok).toBe(true);
  });
});

describe("agreement", () => {
  it("parses to the stored shape, checked_at becoming checked_at_ms", () => {
    expect(kept(agreement({ extra: 1 }))).toEqual({
      v: 1,
      type: "agreement",
      session_id: "s_0123456789ab",
      field: "order_total",
      tool_a: "get_order",
      tool_b: "get_invoice",
      agreed: true,
      checked_at_ms: NOW - 120_000,
      window_ms: 300_000,
    });
  });

  it.each(["session_id", "field", "tool_a", "tool_b", "agreed", "checked_at", "window_ms"])("drops an agreement without %s", (field) => {
    const item = agreement();
    delete item[field];
    expect(droppedReason(item)).toBe(`${field}: missing`);
  });

  it("caps field at 128 and tool names at 200; window_ms has no cap but a whole number (SPEC §1.2)", () => {
    expect(kept(agreement({ field: repeat(MAX_AGREEMENT_FIELD_CHARS - 1) }))).toBeTruthy();
    expect(kept(agreement({ field: repeat(MAX_AGREEMENT_FIELD_CHARS) }))).toBeTruthy();
    expect(droppedReason(agreement({ field: repeat(MAX_AGREEMENT_FIELD_CHARS + 1) }))).toBe("field: too long");
    for (const toolField of ["tool_a", "tool_b"]) {
      expect(kept(agreement({ [toolField]: repeat(MAX_TOOL_NAME_CHARS - 1) }))).toBeTruthy();
      expect(kept(agreement({ [toolField]: repeat(MAX_TOOL_NAME_CHARS) }))).toBeTruthy();
      expect(droppedReason(agreement({ [toolField]: repeat(MAX_TOOL_NAME_CHARS + 1) }))).toBe(`${toolField}: too long`);
    }
    expect(droppedReason(agreement({ session_id: repeat(MAX_SESSION_ID_CHARS + 1) }))).toBe("session_id: too long");
    expect(kept(agreement({ session_id: "s" }))).toBeTruthy();
    expect(droppedReason(agreement({ session_id: "" }))).toBe("session_id: empty");
    expect(kept(agreement({ window_ms: 0 }))).toMatchObject({ window_ms: 0 });
    // More than a day (a producer's configured window) is kept: SPEC §1.2 caps only byte counts and duration_ms.
    expect(kept(agreement({ window_ms: 86_400_001 }))).toMatchObject({ window_ms: 86_400_001 });
    expect(kept(agreement({ window_ms: 2_147_483_648 }))).toMatchObject({ window_ms: 2_147_483_648 });
    expect(kept(agreement({ window_ms: MAX_AGREEMENT_WINDOW_MS - 1 }))).toBeTruthy();
    expect(kept(agreement({ window_ms: MAX_AGREEMENT_WINDOW_MS }))).toMatchObject({ window_ms: Number.MAX_SAFE_INTEGER });
    expect(droppedReason(agreement({ window_ms: 1.5 }))).toBe("window_ms: not a whole number");
    // Beyond 2^53 a JSON number is no longer an exact whole number.
    expect(droppedReason(agreement({ window_ms: MAX_AGREEMENT_WINDOW_MS + 1 }))).toMatch(/^window_ms: /);
    expect(droppedReason(agreement({ window_ms: -1 }))).toBe("window_ms: negative");
    expect(droppedReason(agreement({ agreed: "yes" }))).toBe("agreed: wrong type");
    // field, tool_a and tool_b name what the verdict is about: empty drops it, one character does not.
    expect(droppedReason(agreement({ field: "" }))).toBe("field: empty");
    expect(kept(agreement({ field: "x" }))).toMatchObject({ field: "x" });
    expect(droppedReason(agreement({ tool_a: "" }))).toBe("tool_a: empty");
    expect(droppedReason(agreement({ tool_b: "" }))).toBe("tool_b: empty");
    expect(kept(agreement({ tool_a: "a", tool_b: "b" }))).toMatchObject({ tool_a: "a", tool_b: "b" });
  });

  it("applies the window to checked_at", () => {
    expect(kept(agreement({ checked_at: "2026-11-22T12:00:00Z" }))).toMatchObject({ checked_at_ms: NOW - MAX_PAST_MS });
    expect(droppedReason(agreement({ checked_at: "2026-11-22T11:59:59.999Z" }))).toBe("checked_at: more than 7 days old");
    expect(kept(agreement({ checked_at: "2026-11-29T12:05:00Z" }))).toBeTruthy();
    expect(droppedReason(agreement({ checked_at: "2026-11-29T12:05:00.001Z" }))).toBe("checked_at: more than 5 minutes in the future");
  });
});

describe("every text cap counts code points (SPEC §1.2)", () => {
  // Each capped text field, as a way to put a value there and the reason its overflow gives.
  const TEXT_FIELDS: [string, number, (value: string) => Record<string, unknown>, string][] = [
    ["call session_id", MAX_SESSION_ID_CHARS, (v) => call({ session_id: v }), "session_id"],
    ["call client_name", MAX_CLIENT_NAME_CHARS, (v) => call({ client_name: v }), "client_name"],
    ["call tool_name", MAX_TOOL_NAME_CHARS, (v) => call({ tool_name: v }), "tool_name"],
    ["startup session_id", MAX_SESSION_ID_CHARS, (v) => startup({ session_id: v }), "session_id"],
    ["startup client_name", MAX_CLIENT_NAME_CHARS, (v) => startup({ client_name: v }), "client_name"],
    ["startup tools[].name", MAX_TOOL_NAME_CHARS, (v) => startup({ tools: [tool({ name: v })] }), "tools.0.name"],
    ["startup sdk", MAX_SDK_CHARS, (v) => startup({ sdk: v }), "sdk"],
    ["startup mcp_sdk_version", MAX_MCP_SDK_VERSION_CHARS, (v) => startup({ mcp_sdk_version: v }), "mcp_sdk_version"],
    ["startup protocol_version", MAX_PROTOCOL_VERSION_CHARS, (v) => startup({ protocol_version: v }), "protocol_version"],
    ["startup agree_declared[].field", MAX_AGREEMENT_FIELD_CHARS, (v) => startup({ agree_declared: [{ field: v, tools: [] }] }), "agree_declared.0.field"],
    ["startup agree_declared[].tools[]", MAX_TOOL_NAME_CHARS, (v) => startup({ agree_declared: [{ field: "f", tools: [v] }] }), "agree_declared.0.tools.0"],
    ["agreement session_id", MAX_SESSION_ID_CHARS, (v) => agreement({ session_id: v }), "session_id"],
    ["agreement field", MAX_AGREEMENT_FIELD_CHARS, (v) => agreement({ field: v }), "field"],
    ["agreement tool_a", MAX_TOOL_NAME_CHARS, (v) => agreement({ tool_a: v }), "tool_a"],
    ["agreement tool_b", MAX_TOOL_NAME_CHARS, (v) => agreement({ tool_b: v }), "tool_b"],
  ];

  it.each(TEXT_FIELDS)("%s: %i astral characters are kept, one more is dropped", (_name, max, item, path) => {
    // 🚀 is U+1F680: two UTF-16 units, one code point.
    expect(kept(item(repeat(max - 1, "🚀")))).toBeTruthy();
    expect(kept(item(repeat(max, "🚀")))).toBeTruthy();
    expect(droppedReason(item(repeat(max + 1, "🚀")))).toBe(`${path}: too long`);
    // Mixed with ASCII and a character from U+E000–U+FFFF (one unit, one code point).
    expect(kept(item(`a${repeat(max - 2, "🚀")}\uffff`))).toBeTruthy();
    expect(droppedReason(item(`a${repeat(max - 1, "🚀")}\uffff`))).toBe(`${path}: too long`);
    // A lone surrogate (valid JSON, stored as U+FFFD) is one code point.
    expect(kept(item(repeat(max, "\ud800")))).toBeTruthy();
    expect(droppedReason(item(repeat(max + 1, "\ud800")))).toBe(`${path}: too long`);
  });

  it.each(TEXT_FIELDS)("%s: payloadSchema (no fast path) counts the same way", (_name, max, item) => {
    expect(payloadSchema.safeParse(item(repeat(max, "🚀"))).success).toBe(true);
    expect(payloadSchema.safeParse(item(repeat(max + 1, "🚀"))).success).toBe(false);
    expect(payloadSchema.safeParse(item(repeat(max + 1, "x"))).success).toBe(false);
  });
});

describe("payloadSchema (what the SDK validates before sending)", () => {
  it("accepts every payload type without a clock and rejects invalid ones", () => {
    expect(payloadSchema.safeParse(call()).success).toBe(true);
    expect(payloadSchema.safeParse(startup()).success).toBe(true);
    expect(payloadSchema.safeParse(agreement()).success).toBe(true);
    expect(payloadSchema.safeParse(call({ is_empty: true, outcome: "crashed" })).success).toBe(false);
    expect(payloadSchema.safeParse({ ...call(), type: "other" }).success).toBe(false);
    // No clock: an old timestamp is the worker's concern, not the schema's.
    expect(payloadSchema.safeParse(call({ started_at: "2001-01-01T00:00:00Z" })).success).toBe(true);
  });

  it("derives input and output types from the schemas", () => {
    expectTypeOf<CallPayload["started_at_ms"]>().toEqualTypeOf<number>();
    expectTypeOf<CallPayloadInput["started_at"]>().toEqualTypeOf<string>();
    expectTypeOf<CallPayloadInput["duration_ms"]>().toEqualTypeOf<number | undefined>();
    expectTypeOf<CallPayload["duration_ms"]>().toEqualTypeOf<number>();
    expectTypeOf<AgreementPayload["checked_at_ms"]>().toEqualTypeOf<number>();
    expectTypeOf<StartupPayload["tools"][number]["schema_hash"]>().toEqualTypeOf<string | null>();
    expectTypeOf<StartupPayload["transport"]>().toEqualTypeOf<"stdio" | "http" | "sse" | "unknown" | null>();
    expectTypeOf<undefined>().toExtend<StartupPayloadInput["tools"]>(); // a producer may omit tools
    expectTypeOf<undefined>().not.toExtend<StartupPayload["tools"]>(); // the parsed list is always there
    expectTypeOf<Payload["type"]>().toEqualTypeOf<"call" | "startup" | "agreement">();
  });
});
