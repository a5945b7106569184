// POST /v1/ingest through the real worker: every row of the SPEC §1.1 table, the check order,
// the caps at and over their limits, and what reaches D1 (SPEC §1.2, migrations/).
import { env, runInDurableObject } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { MAX_BODY_BYTES } from "../../src/shared/index.ts";
import { RATE_LIMITS, codeOfStatus } from "../../src/worker/errors.ts";
import worker from "../../src/worker/index.ts";
import { agreementPayload, callPayload, isoAgo, postIngest, startupPayload, storedRows, streamOf } from "./helpers/ingest.ts";
import { createProject, createKey, revokeKey, setPayloadBudget } from "./helpers/projects.ts";
import { runCron } from "./helpers/cron.ts";

const calls = (n: number, extra: (i: number) => Record<string, unknown> = () => ({})) =>
  Array.from({ length: n }, (_, i) => callPayload({ tool_name: `tool_${i % 7}`, ...extra(i) }));

/** A JSON body of exactly `bytes` bytes: a valid one-call envelope padded with spaces. */
function envelopeOfExactly(bytes: number): string {
  const core = JSON.stringify({ batch: [callPayload()] });
  return core.slice(0, -1) + " ".repeat(bytes - core.length) + "}";
}

async function expectError(res: Response, status: number) {
  expect(res.status).toBe(status);
  expect(res.headers.get("content-type")).toContain("application/json");
  const body = await res.json<Record<string, unknown>>();
  expect(typeof body.error).toBe("string");
  // One error model (src/worker/errors.ts): the code of the status, the 429 included, and the
  // request's id (the answer's X-Request-Id). A 429 also names the limit it answers for (SPEC §3).
  const requestId = res.headers.get("x-request-id");
  expect(requestId).toMatch(/^[\w-]+$/);
  expect(body).toEqual({ error: body.error, code: codeOfStatus(status), ...(status === 429 ? { limit: body.limit } : {}), request_id: requestId });
  if (status === 429) expect(RATE_LIMITS).toContain(body.limit);
  return body.error as string;
}

/** One rollup run (the 5-minute cron), now. */
const rollup = () => runCron(Date.now());

describe("202: a valid envelope of 0–1,000 items", () => {
  it("answers 202 with an empty body and stores the batch", async () => {
    const p = await createProject();
    const res = await postIngest({ batch: [callPayload(), startupPayload(), agreementPayload()] }, { key: p.ingest_key });
    expect(res.status).toBe(202);
    expect(await res.text()).toBe("");
    const rows = await storedRows(p.project_id);
    expect(rows.calls).toHaveLength(1);
    expect(rows.startups).toHaveLength(1);
    expect(rows.agreements).toHaveLength(1);
    // Ingest writes no session row (the rollup derives them, docs/ingest.md).
    expect(rows.sessions).toHaveLength(0);
  });

  it("works through the runtime's own entry point (exports.default.fetch)", async () => {
    const p = await createProject();
    const res = await exports.default.fetch("http://worker/v1/ingest", {
      method: "POST",
      headers: { authorization: `Bearer ${p.ingest_key}`, "content-type": "application/json" },
      body: JSON.stringify({ batch: [callPayload({ tool_name: "via_entry" })] }),
    });
    expect(res.status).toBe(202);
    expect(await res.text()).toBe("");
    // The write runs in waitUntil, after the answer: wait for it to land.
    await vi.waitFor(async () => expect((await storedRows(p.project_id)).calls.map((r) => r.tool_name)).toEqual(["via_entry"]), { timeout: 5000 });
  });

  it("accepts an empty batch (0 items)", async () => {
    const p = await createProject();
    const res = await postIngest({ batch: [] }, { key: p.ingest_key });
    expect(res.status).toBe(202);
    expect((await storedRows(p.project_id)).calls).toHaveLength(0);
  });

  it.each([999, 1000])("accepts %i items (SPEC §1.1: up to 1,000) and stores them all in receive order", async (n) => {
    const p = await createProject();
    const hashes = Array.from({ length: n }, (_, i) => i.toString(16).padStart(12, "0"));
    const res = await postIngest({ batch: calls(n, (i) => ({ args_hash: hashes[i] })) }, { key: p.ingest_key });
    expect(res.status).toBe(202);
    const rows = (await storedRows(p.project_id)).calls;
    expect(rows).toHaveLength(n);
    expect(rows.map((r) => r.args_hash)).toEqual(hashes);
  });

  it("accepts application/json with parameters and in any case", async () => {
    const p = await createProject();
    for (const contentType of ["application/json; charset=utf-8", "Application/JSON"]) {
      expect((await postIngest({ batch: [] }, { key: p.ingest_key, contentType })).status).toBe(202);
    }
  });
});

describe("401: no, unknown or revoked key", () => {
  it("answers 401 without a key, with an unknown one, a malformed header, or a read key", async () => {
    const p = await createProject();
    const body = { batch: [callPayload()] };
    await expectError(await postIngest(body, {}), 401);
    await expectError(await postIngest(body, { key: "mp_live_" + "A".repeat(32) }), 401);
    await expectError(await postIngest(body, { headers: { authorization: p.ingest_key } }), 401);
    await expectError(await postIngest(body, { headers: { authorization: `Basic ${p.ingest_key}` } }), 401);
    await expectError(await postIngest(body, { key: p.read_key }), 401);
    expect((await storedRows(p.project_id)).calls).toHaveLength(0);
  });

  it("answers 401 for a revoked key, while the project's other ingest key still works", async () => {
    const p = await createProject();
    const second = await createKey(p.project_id, "ingest");
    await revokeKey(p.ingest_key.slice(0, 16));
    await expectError(await postIngest({ batch: [callPayload()] }, { key: p.ingest_key }), 401);
    expect((await postIngest({ batch: [callPayload()] }, { key: second.key })).status).toBe(202);
    expect((await storedRows(p.project_id)).calls).toHaveLength(1);
  });

  it("checks the key before anything else", async () => {
    // Wrong content type, oversized, not JSON: the missing key still answers first.
    await expectError(await postIngest("x".repeat(MAX_BODY_BYTES + 1), { contentType: "text/plain" }), 401);
  });
});

describe("415: content type not JSON", () => {
  it("answers 415 for a missing or non-JSON content type", async () => {
    const p = await createProject();
    const body = JSON.stringify({ batch: [callPayload()] });
    for (const contentType of [null, "text/plain", "application/x-www-form-urlencoded", "application/jsonx", "text/json"]) {
      await expectError(await postIngest(body, { key: p.ingest_key, contentType }), 415);
    }
    expect((await storedRows(p.project_id)).calls).toHaveLength(0);
  });

  it("checks the content type before the body size", async () => {
    const p = await createProject();
    await expectError(await postIngest("x".repeat(MAX_BODY_BYTES + 1), { key: p.ingest_key, contentType: "text/plain" }), 415);
  });
});

describe("413: body over 1 MiB", () => {
  it("accepts a body of exactly 1 MiB and refuses one byte more (with Content-Length)", async () => {
    const p = await createProject();
    const exact = envelopeOfExactly(MAX_BODY_BYTES);
    expect(new TextEncoder().encode(exact).length).toBe(MAX_BODY_BYTES);
    expect((await postIngest(exact, { key: p.ingest_key })).status).toBe(202);
    await expectError(await postIngest(envelopeOfExactly(MAX_BODY_BYTES + 1), { key: p.ingest_key }), 413);
    expect((await storedRows(p.project_id)).calls).toHaveLength(1);
  });

  it("counts the bytes actually read when there is no Content-Length", async () => {
    const p = await createProject();
    const exact = await postIngest(streamOf(envelopeOfExactly(MAX_BODY_BYTES)), { key: p.ingest_key });
    expect(exact.status).toBe(202);
    await expectError(await postIngest(streamOf(envelopeOfExactly(MAX_BODY_BYTES + 1)), { key: p.ingest_key }), 413);
    await expectError(await postIngest(streamOf(envelopeOfExactly(3 * MAX_BODY_BYTES)), { key: p.ingest_key }), 413);
    expect((await storedRows(p.project_id)).calls).toHaveLength(1);
  });

  it("checks the size before the JSON", async () => {
    const p = await createProject();
    await expectError(await postIngest("{".repeat(MAX_BODY_BYTES + 1), { key: p.ingest_key }), 413);
  });
});

describe("400: not JSON, not an object, or batch not an array", () => {
  it("answers 400 without echoing the input", async () => {
    const p = await createProject();
    const bodies = ["", "not json SECRET_INPUT", "{\"batch\": [", "[]", "null", "\"SECRET_INPUT\"", "42", "{}",
      JSON.stringify({ batch: "SECRET_INPUT" }), JSON.stringify({ batch: { 0: callPayload() } }), JSON.stringify({ batch: null })];
    for (const body of bodies) {
      const error = await expectError(await postIngest(body, { key: p.ingest_key }), 400);
      expect(error).not.toContain("SECRET_INPUT");
    }
    // Invalid UTF-8 is not JSON text.
    const invalidUtf8 = new Uint8Array([...new TextEncoder().encode('{"batch":["'), 0xff, 0xfe, ...new TextEncoder().encode('"]}')]);
    await expectError(await postIngest(invalidUtf8, { key: p.ingest_key }), 400);
  });
});

describe("413: more than 1,000 items", () => {
  it("refuses 1,001 items and stores nothing", async () => {
    const p = await createProject();
    const error = await expectError(await postIngest({ batch: calls(1001) }, { key: p.ingest_key }), 413);
    expect(error).toBe("more than 1000 items in batch");
    expect((await storedRows(p.project_id)).calls).toHaveLength(0);
    // Invalid items count too: 1,001 of them are still too many.
    await expectError(await postIngest({ batch: new Array(1001).fill({ v: 2 }) }, { key: p.ingest_key }), 413);
  });

  it("checks the item count before the budget", async () => {
    const p = await createProject();
    await setPayloadBudget(p.project_id, 1);
    expect((await postIngest({ batch: calls(1) }, { key: p.ingest_key })).status).toBe(202);
    await expectError(await postIngest({ batch: calls(1001) }, { key: p.ingest_key }), 413);
    expect((await postIngest({ batch: calls(1) }, { key: p.ingest_key })).status).toBe(429);
  });
});

describe("429: over the key's payload budget", () => {
  it("refuses the whole batch with Retry-After once the budget is spent, and writes nothing", async () => {
    const p = await createProject();
    await setPayloadBudget(p.project_id, 10);
    const spentAt = Date.now();
    expect((await postIngest({ batch: calls(6) }, { key: p.ingest_key })).status).toBe(202);
    const refused = await postIngest({ batch: calls(6, () => ({ tool_name: "refused_tool" })) }, { key: p.ingest_key });
    expect(await expectError(refused.clone(), 429)).toMatch(/^payload budget exceeded \(10 payloads a minute for this key\); try again in \d+ seconds$/);
    expect((await refused.clone().json<{ limit: string }>()).limit).toBe("payload_budget");
    const retryAfter = refused.headers.get("retry-after");
    expect(retryAfter).toMatch(/^[1-9]\d*$/);
    // 2 tokens short at 10/min (one every 6 s): about 12 s less what refilled since the budget was
    // spent (however slow the machine was between the two requests), never more than the minute.
    const refilledSeconds = (Date.now() - spentAt) / 1000;
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(Math.max(1, Math.floor(11 - refilledSeconds)));
    expect(Number(retryAfter)).toBeLessThanOrEqual(13);
    // What is left (4) still fits; invalid items count too.
    expect((await postIngest({ batch: [...calls(3), { v: 2 }] }, { key: p.ingest_key })).status).toBe(202);
    expect((await postIngest({ batch: calls(1) }, { key: p.ingest_key })).status).toBe(429);
    const rows = (await storedRows(p.project_id)).calls;
    expect(rows).toHaveLength(9);
    expect(rows.some((r) => r.tool_name === "refused_tool")).toBe(false);
  });

  it("counts per key: another key of the same project has its own budget", async () => {
    const p = await createProject();
    await setPayloadBudget(p.project_id, 5);
    const second = await createKey(p.project_id, "ingest");
    expect((await postIngest({ batch: calls(5) }, { key: p.ingest_key })).status).toBe(202);
    expect((await postIngest({ batch: calls(1) }, { key: p.ingest_key })).status).toBe(429);
    expect((await postIngest({ batch: calls(5) }, { key: second.key })).status).toBe(202);
  });

  it("applies the default of 10,000 per minute, counted in the key's Durable Object", async () => {
    const p = await createProject();
    // The clock stands still (the object shares this isolate's Date), so no token refills between
    // the requests however slow the machine is: the count is exact, not a window.
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() });
    try {
      // 1,100 payloads: below 90 % of the bucket, where the object stores it (src/worker/budget/key-budget.ts).
      for (const n of [500, 500, 100]) expect((await postIngest({ batch: calls(n) }, { key: p.ingest_key })).status).toBe(202);
      const stub = env.KEY_BUDGET.get(env.KEY_BUDGET.idFromName(p.ingest_key.slice(0, 16)));
      await runInDurableObject(stub, async (_instance, state) => {
        const bucket = await state.storage.get<{ tokens: number; budgetPerMinute: number }>("bucket");
        expect(bucket?.budgetPerMinute).toBe(10_000);
        expect(bucket?.tokens).toBe(10_000 - 1_100);
      });
    } finally {
      vi.useRealTimers();
    }
  });
});

describe("503, never 500, when nothing can be promised", () => {
  it("answers 503 with Retry-After and no stack trace when neither the key's object nor D1 can check the key", async () => {
    const p = await createProject();
    const brokenDb = { prepare() { throw new Error("SECRET_STACK detail"); } } as unknown as D1Database;
    const res = await postIngest({ batch: [callPayload()] }, { key: p.ingest_key, env: { ...env, DB: brokenDb } });
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("10");
    expect(await res.text()).toBe(JSON.stringify({ error: "ingest temporarily unavailable; retry later", code: "SERVICE_UNAVAILABLE", request_id: res.headers.get("x-request-id") }));
  });
});

describe("what is stored", () => {
  it("stores exactly the valid items of a mixed batch", async () => {
    const p = await createProject();
    const batch = [
      callPayload({ tool_name: "kept_1" }),
      callPayload({ v: 2, tool_name: "dropped_version" }),
      "not an object",
      callPayload({ outcome: "crashed", is_empty: true, tool_name: "dropped_empty_error" }),
      callPayload({ started_at: isoAgo(8 * 86_400_000), tool_name: "dropped_too_old" }),
      callPayload({ started_at: new Date(Date.now() + 10 * 60_000).toISOString(), tool_name: "dropped_future" }),
      callPayload({ duration_ms: 86_400_001, tool_name: "dropped_duration" }),
      callPayload({ tool_name: "kept_2", duration_ms: undefined, response_bytes: undefined, is_empty: undefined }),
      startupPayload(),
      startupPayload({ tools: [{ name: "fine", schema_bytes: 1 }, { name: "bad", schema_bytes: -1 }] }),
      agreementPayload(),
      agreementPayload({ agreed: "yes" }),
      { v: 1, type: "unknown" },
    ];
    expect((await postIngest({ batch }, { key: p.ingest_key })).status).toBe(202);
    const rows = await storedRows(p.project_id);
    expect(rows.calls.map((r) => r.tool_name)).toEqual(["kept_1", "kept_2"]);
    expect(rows.calls[1]).toMatchObject({ duration_ms: 0, response_bytes: 0, is_empty: 0, duration_bucket: 0 });
    expect(rows.startups).toHaveLength(1);
    expect(rows.agreements).toHaveLength(1);
  });

  it("keeps every field at its cap and drops it one over (SPEC §1.2), through the worker", async () => {
    const p = await createProject();
    const day = 86_400_000;
    // [label, field overrides at the cap, the same one over]
    const cases: [string, Record<string, unknown>, Record<string, unknown>][] = [
      ["session_id", { session_id: "s".repeat(128) }, { session_id: "s".repeat(129) }],
      ["client_name", { client_name: "c".repeat(128) }, { client_name: "c".repeat(129) }],
      ["tool_name", { tool_name: "t".repeat(200) }, { tool_name: "t".repeat(201) }],
      ["duration_ms", { duration_ms: 86_400_000 }, { duration_ms: 86_400_001 }],
      ["response_bytes", { response_bytes: 2_147_483_647 }, { response_bytes: 2_147_483_648 }],
      ["args_hash long", { args_hash: "a".repeat(64) }, { args_hash: "a".repeat(65) }],
      ["args_hash short", { args_hash: "abcd" }, { args_hash: "abc" }],
      ["started_at past", { started_at: isoAgo(7 * day - 60_000) }, { started_at: isoAgo(7 * day + 60_000) }],
      ["started_at future", { started_at: isoAgo(-4 * 60_000) }, { started_at: isoAgo(-6 * 60_000) }],
    ];
    const batch = cases.flatMap(([label, atCap, over]) => [
      callPayload({ ...atCap, args_hash: atCap.args_hash ?? "0000aaaa0000", session_id: atCap.session_id ?? `kept ${label}` }),
      callPayload({ ...over, session_id: over.session_id ?? `dropped ${label}` }),
    ]);
    const tools = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `tool_${i}`, schema_bytes: 1 }));
    batch.push(startupPayload({ session_id: "kept tools", tools: tools(500) }), startupPayload({ session_id: "dropped tools", tools: tools(501) }));
    // agree_declared: at most 64 fields of at most 64 tools each (SPEC §1.2).
    const names = (n: number) => Array.from({ length: n }, (_, i) => `tool_${i}`);
    const declared = (fields: number, toolsEach: number) => Array.from({ length: fields }, (_, i) => ({ field: `f${i}`, tools: names(toolsEach) }));
    batch.push(
      startupPayload({ session_id: "kept declared 63x63", agree_declared: declared(63, 63) }),
      startupPayload({ session_id: "kept declared 64x64", agree_declared: declared(64, 64) }),
      startupPayload({ session_id: "dropped declared 65 fields", agree_declared: declared(65, 1) }),
      startupPayload({ session_id: "dropped declared 65 tools", agree_declared: declared(1, 65) }),
    );
    expect((await postIngest({ batch }, { key: p.ingest_key })).status).toBe(202);
    const rows = await storedRows(p.project_id);
    expect(rows.calls).toHaveLength(cases.length);
    expect(rows.calls.some((r) => String(r.session_id).startsWith("dropped"))).toBe(false);
    expect(rows.calls.find((r) => r.duration_ms === 86_400_000)).toBeDefined();
    expect(rows.calls.find((r) => r.response_bytes === 2_147_483_647)).toBeDefined();
    expect(rows.startups.map((r) => r.session_id)).toEqual(["kept tools", "kept declared 63x63", "kept declared 64x64"]);
    expect(JSON.parse(String(rows.startups[0]!.tools_json))).toHaveLength(500);
    const declaredOf = (i: number) => JSON.parse(String(rows.startups[i]!.agree_declared_json)) as { tools: string[] }[];
    expect(declaredOf(2).map((d) => d.tools.length)).toEqual(new Array(64).fill(64));
  });

  it("stores each field in its column, with the duration bucket, and nothing else", async () => {
    const p = await createProject();
    const nowIso = new Date(Date.now() - 1000).toISOString();
    const batch = [
      callPayload({ started_at: nowIso, duration_ms: 250, outcome: "ok", is_empty: true, response_bytes: 2, args_hash: "0123456789ab", SECRET_FIELD: "SECRET_VALUE", arguments: { q: "SECRET_ARG" } }),
      startupPayload({ SECRET_FIELD: "SECRET_VALUE", tools: [{ name: "t", schema_bytes: 5, description: "SECRET_DESCRIPTION", inputSchema: { SECRET: 1 }, policy: { requires_authorization: false, requires_verified_identity: true, SECRET_FLAG: true } }] }),
      agreementPayload({ value_a: "SECRET_VALUE", agreed: false }),
    ];
    const before = Date.now();
    expect((await postIngest({ batch }, { key: p.ingest_key, headers: { "user-agent": "SECRET_UA", "cf-connecting-ip": "203.0.113.9" } })).status).toBe(202);
    const rows = await storedRows(p.project_id);
    const dump = JSON.stringify(rows);
    for (const secret of ["SECRET", "203.0.113.9"]) expect(dump).not.toContain(secret);
    const call = rows.calls[0]!;
    expect(call).toMatchObject({ project_id: p.project_id, started_at_ms: Date.parse(nowIso), duration_ms: 250, outcome: "ok", is_empty: 1, response_bytes: 2, args_hash: "0123456789ab" });
    const { durationBucket } = await import("../../src/worker/histogram.ts");
    expect(call.duration_bucket).toBe(durationBucket(250));
    expect(call.received_at_ms as number).toBeGreaterThanOrEqual(before);
    const startup = rows.startups[0]!;
    expect(JSON.parse(startup.tools_json as string)).toEqual([
      { name: "t", schema_bytes: 5, schema_hash: null, description_hash: null, description_norm: null, policy: { requires_authorization: false, requires_verified_identity: true } },
    ]);
    expect(JSON.parse(startup.agree_declared_json as string)).toEqual([{ field: "order_total", tools: ["search_orders", "delete_order"] }]);
    expect(startup).toMatchObject({ sdk: "mcpulse-edge-ts/0.1.0", mcp_sdk_version: "1.32.0", transport: "stdio", protocol_version: "2025-06-18" });
    // Sent as (search_orders, get_order); stored in code-point order (SPEC §2.5).
    expect(rows.agreements[0]).toMatchObject({ field: "order_total", tool_a: "get_order", tool_b: "search_orders", agreed: 0, window_ms: 300_000 });
  });

  it("keeps a startup whose transport is unexpected (the PHP SDK's streamable-http), stored as unknown (SPEC §1.2)", async () => {
    const p = await createProject();
    const batch = [
      startupPayload({ session_id: "php", transport: "streamable-http" }),
      startupPayload({ session_id: "other", transport: "websocket", tools: [{ name: "other_tool", schema_bytes: 1 }] }),
    ];
    expect((await postIngest({ batch }, { key: p.ingest_key })).status).toBe(202);
    const rows = await storedRows(p.project_id);
    expect(rows.startups.map((r) => [r.session_id, r.transport])).toEqual([["php", "unknown"], ["other", "unknown"]]);
    // The tool list, what the startup is for, survives: registered tools, dead tools, policies.
    await runCron(Date.now());
    const res = await exports.default.fetch("http://worker/v1/metrics/tools", { headers: { authorization: `Bearer ${p.read_key}` } });
    const { tools } = await res.json<{ tools: { tool_name: string; registered: boolean }[] }>();
    expect(tools.filter((t) => t.registered).map((t) => t.tool_name)).toEqual(["other_tool"]);
  });

  it("stores a lone surrogate as U+FFFD, so one session id never names two rows", async () => {
    const p = await createProject();
    const body = `{"batch":[${JSON.stringify(callPayload({ tool_name: "a", session_id: "s_1" })).replace('"a"', '"a\\ud800b"').replace('"s_1"', '"s_\\udc00"')},` +
      `${JSON.stringify(callPayload({ tool_name: "emoji 😀", session_id: "s_\ufffd" }))}]}`;
    expect((await postIngest(body, { key: p.ingest_key })).status).toBe(202);
    await rollup();
    const rows = await storedRows(p.project_id);
    expect(rows.calls.map((r) => r.tool_name)).toEqual(["a\ufffdb", "emoji 😀"]);
    expect(rows.sessions.map((r) => r.session_id)).toEqual(["s_\ufffd"]);
  });

  it("keeps fractional milliseconds of started_at", async () => {
    const p = await createProject();
    const base = new Date(Date.now() - 60_000);
    base.setUTCMilliseconds(0);
    const iso = base.toISOString().replace(".000Z", ".123456789Z");
    await postIngest({ batch: [callPayload({ started_at: iso })] }, { key: p.ingest_key });
    const [row] = (await storedRows(p.project_id)).calls;
    expect(row!.started_at_ms as number).toBeCloseTo(base.getTime() + 123.456789, 2);
  });

  it("the rollup derives sessions: first and last seen over calls and startups, client of the latest", async () => {
    const p = await createProject();
    const t0 = Date.now() - 3_600_000;
    const at = (offsetMs: number) => new Date(t0 + offsetMs).toISOString();
    await postIngest({ batch: [
      callPayload({ session_id: "s_a", started_at: at(1000), client_name: "cursor" }),
      callPayload({ session_id: "s_a", started_at: at(0), client_name: "claude" }),
      callPayload({ session_id: "s_b", started_at: at(500), client_name: "vscode" }),
    ] }, { key: p.ingest_key });
    await rollup();
    let sessions = (await storedRows(p.project_id)).sessions;
    expect(sessions.map((s) => [s.session_id, s.first_seen_ms, s.last_seen_ms, s.client_name])).toEqual([
      ["s_a", t0, t0 + 1000, "cursor"],
      ["s_b", t0 + 500, t0 + 500, "vscode"],
    ]);
    // A later batch: an earlier call moves first_seen but keeps the client of the latest.
    await postIngest({ batch: [callPayload({ session_id: "s_a", started_at: at(-500), client_name: "zed" })] }, { key: p.ingest_key });
    // A startup is seen at its receive time (now), which is the latest: its client wins.
    const before = Date.now();
    await postIngest({ batch: [startupPayload({ session_id: "s_b", client_name: "windsurf" })] }, { key: p.ingest_key });
    await rollup();
    sessions = (await storedRows(p.project_id)).sessions;
    expect(sessions[0]).toMatchObject({ session_id: "s_a", first_seen_ms: t0 - 500, last_seen_ms: t0 + 1000, client_name: "cursor" });
    expect(sessions[1]).toMatchObject({ session_id: "s_b", first_seen_ms: t0 + 500, client_name: "windsurf" });
    expect(sessions[1]!.last_seen_ms as number).toBeGreaterThanOrEqual(before);
  });

  it("attributes rows only to the key's project: project B sees nothing of project A", async () => {
    const a = await createProject("a");
    const b = await createProject("b");
    await postIngest({ batch: calls(3, () => ({ tool_name: "a_tool" })) }, { key: a.ingest_key });
    await postIngest({ batch: calls(2, () => ({ tool_name: "b_tool" })) }, { key: b.ingest_key });
    await rollup();
    const rowsA = await storedRows(a.project_id);
    const rowsB = await storedRows(b.project_id);
    expect(rowsA.calls.map((r) => r.tool_name)).toEqual(["a_tool", "a_tool", "a_tool"]);
    expect(rowsB.calls.map((r) => r.tool_name)).toEqual(["b_tool", "b_tool"]);
    // The same session id in both projects stays two sessions.
    expect(rowsA.sessions).toHaveLength(1);
    expect(rowsB.sessions).toHaveLength(1);
  });

  it("writes a batch in the same number of statements whatever its size", async () => {
    const p = await createProject();
    const batchSizes: number[] = [];
    const countingDb = new Proxy(env.DB, {
      get(target, prop) {
        if (prop === "batch") return (statements: D1PreparedStatement[]) => (batchSizes.push(statements.length), target.batch(statements));
        const value = Reflect.get(target, prop);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const mixed = (n: number) => [...calls(n), startupPayload(), agreementPayload()];
    await postIngest({ batch: mixed(1) }, { key: p.ingest_key, env: { ...env, DB: countingDb } });
    await postIngest({ batch: mixed(498) }, { key: p.ingest_key, env: { ...env, DB: countingDb } });
    // The calls' append and its insert (one of them writes), the startups, the verdicts.
    expect(batchSizes).toEqual([4, 4]);
    expect((await storedRows(p.project_id)).calls).toHaveLength(499);
  });
});
