// One logger, one request id (src/worker/log.ts, app.ts): every answer names its request in
// X-Request-Id (cf-ray when Cloudflare sent one), every error body carries the same id, and every log
// line of the request — the work after the answer included — carries it too. Queue messages and cron
// triggers log under their own ids.
import { createExecutionContext, createMessageBatch, createScheduledController, env, waitOnExecutionContext } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { fromBinary, fromJsonString } from "@bufbuild/protobuf";
import { afterEach, describe, expect, it, vi } from "vitest";
import worker from "../../src/worker/index.ts";
import type { Env } from "../../src/worker/env.ts";
import { currentLogScope, errorName, log, logLine, queueInvocationId, scheduledInvocationId, withLogScope } from "../../src/worker/log.ts";
import { StatusSchema } from "../../src/worker/otlp/gen/google/rpc/status_pb.ts";
import { INGEST_QUEUE_NAME } from "../../src/worker/queues/ingest-writes.ts";
import { ROLLUP_QUEUE_NAME } from "../../src/worker/queues/rollup-jobs.ts";
import { callPayload, postIngest } from "./helpers/ingest.ts";
import { exportRequest, postTraces, protobufOf, toolSpan } from "./helpers/otlp.ts";
import { createProject, readSessionCookie, setPayloadBudget } from "./helpers/projects.ts";

const RAY = "8f1a2b3c4d5e6f70-LHR";

/** A request through the worker's own fetch, waiting for its waitUntil work; `env` swappable for faults. */
async function fetchWorker(path: string, init: RequestInit = {}, bindings: Env = env): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await worker.fetch!(new Request(`http://worker${path}`, init) as never, bindings, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}

/** The JSON lines a console method was called with while `run` ran. */
async function logged(method: "log" | "error", run: () => Promise<unknown>): Promise<Record<string, unknown>[]> {
  const lines: string[] = [];
  const spy = vi.spyOn(console, method).mockImplementation((line: unknown) => void lines.push(String(line)));
  try {
    await run();
  } finally {
    spy.mockRestore();
  }
  return lines.map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** A D1 whose statements fail after the key check (a fault the API answers with its bare 500). */
function failingAfterKeyCheck(): D1Database {
  return new Proxy(env.DB, {
    get(target, prop, receiver) {
      if (prop !== "prepare") return Reflect.get(target, prop, receiver);
      return (sql: string) => {
        if (/FROM api_keys/i.test(sql)) return target.prepare(sql);
        throw new TypeError("SECRET detail");
      };
    },
  });
}

afterEach(() => vi.restoreAllMocks());

describe("the request id", () => {
  it("is on every answer, a fresh one per request when Cloudflare sent no cf-ray", async () => {
    const a = await fetchWorker("/healthz");
    const b = await fetchWorker("/healthz");
    expect(a.status).toBe(200);
    expect(a.headers.get("x-request-id")).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(b.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    expect(a.headers.get("x-request-id")).not.toBe(b.headers.get("x-request-id"));
  });

  it("is Cloudflare's cf-ray when there is one; a malformed cf-ray or a client's own X-Request-Id is not taken", async () => {
    expect((await fetchWorker("/healthz", { headers: { "cf-ray": RAY } })).headers.get("x-request-id")).toBe(RAY);
    const malformed = await fetchWorker("/healthz", { headers: { "cf-ray": "ray id with spaces" } });
    expect(malformed.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    const chosen = await fetchWorker("/healthz", { headers: { "x-request-id": "chosen-by-the-client" } });
    expect(chosen.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("is in the body and the header of every kind of error: 400, 401, 404, 429, 500, 503", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {}); // the 500's and the 503's lines
    const p = await createProject();
    const auth = { authorization: `Bearer ${p.read_key}`, "cf-ray": RAY };
    const answers: [number, Response][] = [
      [400, await fetchWorker("/v1/metrics/tools?from=yesterday", { headers: auth })],
      [400, await fetchWorker("/v1/admin/projects", { method: "POST", headers: { authorization: `Bearer ${env.ADMIN_TOKEN}`, "content-type": "application/json", "cf-ray": RAY }, body: JSON.stringify({ name: "" }) })],
      [401, await fetchWorker("/v1/metrics/tools", { headers: { "cf-ray": RAY } })],
      [404, await fetchWorker("/nothing-here", { headers: { "cf-ray": RAY } })],
      [500, await fetchWorker("/v1/metrics/tools", { headers: auth }, { ...env, DB: failingAfterKeyCheck() })],
    ];
    await setPayloadBudget(p.project_id, 1);
    expect((await postIngest({ batch: [callPayload()] }, { key: p.ingest_key })).status).toBe(202);
    answers.push([429, await postIngest({ batch: [callPayload()] }, { key: p.ingest_key, headers: { "cf-ray": RAY } })]);
    const brokenDb = { prepare() { throw new Error("down"); } } as unknown as D1Database;
    const other = await createProject();
    answers.push([503, await postIngest({ batch: [callPayload()] }, { key: other.ingest_key, headers: { "cf-ray": RAY }, env: { ...env, DB: brokenDb } })]);
    for (const [status, res] of answers) {
      expect(res.status).toBe(status);
      expect(res.headers.get("x-request-id"), String(status)).toBe(RAY);
      const body = await res.json<Record<string, unknown>>();
      expect(body.request_id, String(status)).toBe(RAY);
      expect(typeof body.error).toBe("string");
    }
  });

  it("ends the message of OTLP's Status, in JSON and in protobuf", async () => {
    const body = protobufOf(exportRequest([toolSpan("get_weather")]));
    const json = await postTraces(JSON.stringify({}), { contentType: "application/json", headers: { "cf-ray": RAY } });
    expect(json.status).toBe(401);
    expect(json.headers.get("x-request-id")).toBe(RAY);
    expect(fromJsonString(StatusSchema, await json.text()).message).toBe(`missing bearer key (request id ${RAY})`);
    const p = await createProject();
    const unsupported = await postTraces(body, { key: p.ingest_key, headers: { "cf-ray": RAY, "content-encoding": "br" } });
    expect(unsupported.status).toBe(415);
    const status = fromBinary(StatusSchema, new Uint8Array(await unsupported.arrayBuffer()));
    expect(status.message).toBe(`content encoding must be gzip or identity (request id ${RAY})`);
  });

  it("is in the data of /mcp's JSON-RPC refusals, and on the dashboard's error page", async () => {
    const p = await createProject();
    const res = await fetchWorker("/mcp", {
      method: "POST",
      headers: { authorization: `Bearer ${p.read_key}`, "content-type": "application/json", accept: "application/json, text/event-stream", "cf-ray": RAY },
      body: "{not json",
    });
    expect(res.status).toBe(400);
    expect(res.headers.get("x-request-id")).toBe(RAY);
    const rpc = await res.json<{ jsonrpc: string; error: { code: number; message: string; data: { request_id: string } } }>();
    expect(rpc.jsonrpc).toBe("2.0");
    expect(rpc.error.code).toBe(-32700);
    expect(rpc.error.data.request_id).toBe(RAY);

    const page = await exports.default.fetch("http://worker/?from=2026-02-30", { headers: { cookie: await readSessionCookie(p.read_key), "cf-ray": RAY } });
    expect(page.status).toBe(400);
    expect(page.headers.get("x-request-id")).toBe(RAY);
    expect(await page.text()).toContain(`data-request-id="${RAY}"`);
  });
});

describe("the request id at the edge (OAuth, SPEC §9)", () => {
  it("names the OAuth library's answers and the token endpoint's own refusal; an answer of the app keeps the app's id", async () => {
    const metadata = await exports.default.fetch("https://mcpulse.example/.well-known/oauth-protected-resource/mcp", { headers: { "cf-ray": RAY } });
    expect(metadata.status).toBe(200);
    expect(metadata.headers.get("x-request-id")).toBe(RAY);
    const challenge = await exports.default.fetch("https://mcpulse.example/mcp", { method: "POST", headers: { authorization: "Bearer prj_x:grant:secret" } });
    expect(challenge.status).toBe(401);
    expect(challenge.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    const token = await exports.default.fetch("https://mcpulse.example/oauth/token", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", "cf-ray": RAY },
      body: new URLSearchParams({ grant_type: "authorization_code", code: "a:b:c", client_id: "https://10.0.0.8/client.json", code_verifier: "v".repeat(43) }),
    });
    expect(token.status).toBe(401);
    expect(token.headers.get("x-request-id")).toBe(RAY);
    expect(await token.json()).toMatchObject({ error: "invalid_client", request_id: RAY });
    // /mcp through the library's resource server to the app, without a cf-ray: the app's fresh id is the one answered.
    const p = await createProject();
    const mcp = await exports.default.fetch("https://mcpulse.example/mcp", {
      method: "POST",
      headers: { authorization: `Bearer ${p.read_key}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: "{not json",
    });
    expect(mcp.status).toBe(400);
    const rpc = await mcp.json<{ error: { data: { request_id: string } } }>();
    expect(rpc.error.data.request_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(mcp.headers.get("x-request-id")).toBe(rpc.error.data.request_id);
  });
});

describe("log lines", () => {
  it("of a request carry its id: a fault's unhandled_error names the error's class, never its message", async () => {
    const p = await createProject();
    let res!: Response;
    const lines = await logged("error", async () => {
      res = await fetchWorker("/v1/metrics/tools", { headers: { authorization: `Bearer ${p.read_key}`, "cf-ray": RAY } }, { ...env, DB: failingAfterKeyCheck() });
    });
    expect(res.status).toBe(500);
    expect(lines).toEqual([{ event: "unhandled_error", level: "error", request_id: RAY, name: "TypeError" }]);
    expect(JSON.stringify(lines)).not.toContain("SECRET");
  });

  it("of a cron trigger carry the trigger's id", async () => {
    const scheduledTime = Date.UTC(2026, 11, 7, 3, 30);
    const lines = await logged("error", async () => worker.scheduled!(createScheduledController({ scheduledTime, cron: "0 0 1 1 *" }), env));
    expect(lines).toEqual([{ event: "unknown_cron", level: "error", invocation_id: "scheduled:2026-12-07T03:30:00.000Z:0 0 1 1 *", cron: "0 0 1 1 *" }]);
  });

  it("of a queue message carry the message's id", async () => {
    const ingest = createMessageBatch(INGEST_QUEUE_NAME, [
      { id: "msg-a", timestamp: new Date(), attempts: 1, body: { not: "a part" } },
      { id: "msg-b", timestamp: new Date(), attempts: 1, body: 42 },
    ] as Parameters<typeof createMessageBatch>[1]);
    const lines = await logged("error", async () => worker.queue!(ingest as never, env));
    expect(lines).toEqual([
      { event: "ingest_queue_message_invalid", level: "error", invocation_id: "msg-a", id: "msg-a" },
      { event: "ingest_queue_message_invalid", level: "error", invocation_id: "msg-b", id: "msg-b" },
    ]);
    const rollup = createMessageBatch(ROLLUP_QUEUE_NAME, [{ id: "job-x", timestamp: new Date(), attempts: 1, body: { v: 1, kind: "rollup", database: "NOT_A_DB", scheduled_time_ms: 0 } }] as Parameters<typeof createMessageBatch>[1]);
    const jobLines = await logged("error", async () => worker.queue!(rollup as never, env));
    expect(jobLines).toEqual([{ event: "rollup_job_unknown_database", level: "error", invocation_id: "job-x", database: "NOT_A_DB" }]);
  });
});

describe("log.ts", () => {
  it("writes the event first, then the level, the scope's id and the fields; info to console.log, error to console.error", async () => {
    expect(logLine("info", "rollup", { database: "DB", calls: 3 })).toBe('{"event":"rollup","level":"info","database":"DB","calls":3}');
    expect(withLogScope({ request_id: "r-1" }, () => logLine("error", "x"))).toBe('{"event":"x","level":"error","request_id":"r-1"}');
    const info = await logged("log", async () => withLogScope({ invocation_id: "i-1" }, () => log.info("rollup_lease_held", { database: "DB" })));
    expect(info).toEqual([{ event: "rollup_lease_held", level: "info", invocation_id: "i-1", database: "DB" }]);
    const error = await logged("error", async () => log.error("rollup_lease_lost"));
    expect(error).toEqual([{ event: "rollup_lease_lost", level: "error" }]);
  });

  it("keeps the scope across awaits and for work started inside it; an inner scope wins; none outside", async () => {
    expect(currentLogScope()).toBeUndefined();
    let later: Promise<unknown> = Promise.resolve();
    await withLogScope({ request_id: "outer" }, async () => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      expect(currentLogScope()).toEqual({ request_id: "outer" });
      later = new Promise((resolve) => setTimeout(() => resolve(currentLogScope()), 5));
      await withLogScope({ invocation_id: "inner" }, async () => expect(currentLogScope()).toEqual({ invocation_id: "inner" }));
      expect(currentLogScope()).toEqual({ request_id: "outer" });
    });
    expect(currentLogScope()).toBeUndefined();
    expect(await later).toEqual({ request_id: "outer" });
  });

  it("names errors by class (never by message) and invocations by their trigger or first message", () => {
    expect(errorName(new TypeError("SECRET"))).toBe("TypeError");
    expect(errorName("SECRET")).toBe("string");
    expect(errorName(undefined)).toBe("undefined");
    expect(scheduledInvocationId("30 3 * * *", Date.UTC(2026, 0, 2, 3, 30))).toBe("scheduled:2026-01-02T03:30:00.000Z:30 3 * * *");
    const batch = (ids: string[]) => ({ queue: "q", messages: ids.map((id) => ({ id })) }) as unknown as MessageBatch<unknown>;
    expect(queueInvocationId(batch(["m1"]))).toBe("q:m1");
    expect(queueInvocationId(batch(["m1", "m2", "m3"]))).toBe("q:m1+2");
  });
});
