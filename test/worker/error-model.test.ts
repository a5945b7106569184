// One error model (src/worker/errors.ts, docs/errors.md): every error answer of every API route is
// {"error": string, "code": ErrorCode, "request_id": string}, with the status its code names, written by app.onError.
// The route list comes from the app itself, so a new route cannot forget it.
import { env } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { app } from "../../src/worker/app.ts";
import { ERROR_CODE_NAMES, ERROR_CODES, codeOfStatus, type ErrorCode } from "../../src/worker/errors.ts";
import { callPayload, postIngest } from "./helpers/ingest.ts";
import { adminHeaders, createProject, setPayloadBudget } from "./helpers/projects.ts";

const fetchWorker = (path: string, init: RequestInit = {}) => exports.default.fetch(`http://worker${path}`, init);

/** Asserts the one error body and returns its code. */
async function expectErrorModel(res: Response, code: ErrorCode, what: string): Promise<void> {
  expect(res.status, what).toBe(ERROR_CODES[code]);
  expect(res.headers.get("content-type"), what).toContain("application/json");
  const body = await res.json<Record<string, unknown>>();
  // A 429 adds the limit it answers for (SPEC §3), and nothing else does; every one ends with the request's id.
  expect(Object.keys(body), what).toEqual(code === "TOO_MANY_REQUESTS" ? ["error", "code", "limit", "request_id"] : ["error", "code", "request_id"]);
  expect(typeof body.error, what).toBe("string");
  expect((body.error as string).length, what).toBeGreaterThan(0);
  expect(body.code, what).toBe(code);
  // The id of the answer's X-Request-Id, which the request's log lines carry.
  expect(body.request_id, what).toMatch(/^[\w-]{8,}$/);
  expect(body.request_id, what).toBe(res.headers.get("x-request-id"));
}

/** `/v1/admin/projects/:id/keys` → a concrete path (any parameter value will do for a refusal). */
const concrete = (path: string) => path.replace(/:[a-z_]+/g, "x").replace(/\/\*$/, "");

/**
 * Routes whose errors follow another protocol's own model: OTLP/HTTP answers every error with a
 * google.rpc.Status in the request's encoding (SPEC §10), checked below and in otlp-ingest.test.ts.
 */
const OTHER_PROTOCOL_ROUTES = ["/v1/traces"];

/** Routes that need no credential: the read API's OpenAPI document describes routes, never a project's data. */
const PUBLIC_ROUTES = ["/v1/openapi.json"];

/** The API's routes as the app registered them (handlers and middleware alike), pages excluded. */
function apiRoutes(): { method: string; path: string }[] {
  const seen = new Set<string>();
  const routes: { method: string; path: string }[] = [];
  for (const r of app.routes) {
    if (!r.path.startsWith("/v1/") && !r.path.startsWith("/mcp")) continue;
    if (OTHER_PROTOCOL_ROUTES.includes(r.path) || PUBLIC_ROUTES.includes(r.path)) continue;
    if (r.method === "ALL" && r.path.endsWith("*")) continue; // middleware
    const method = r.method === "ALL" ? "POST" : r.method;
    const key = `${method} ${r.path}`;
    if (!seen.has(key)) seen.add(key), routes.push({ method, path: r.path });
  }
  return routes;
}

describe("the error codes", () => {
  it("name one status each; a status alone gives back its general code, never a specific one", () => {
    // Specific codes share the status of a general one, listed after it (docs/errors.md).
    const specific: ErrorCode[] = ["HOURS_NOT_KEPT", "ANALYTICS_UNAVAILABLE"];
    const general = ERROR_CODE_NAMES.filter((code) => !specific.includes(code));
    const statuses = general.map((code) => ERROR_CODES[code]);
    expect(new Set(statuses).size).toBe(statuses.length);
    for (const code of general) expect(codeOfStatus(ERROR_CODES[code])).toBe(code);
    for (const code of specific) {
      expect(statuses).toContain(ERROR_CODES[code]);
      expect(ERROR_CODE_NAMES.indexOf(code)).toBeGreaterThan(ERROR_CODE_NAMES.indexOf(codeOfStatus(ERROR_CODES[code])));
    }
    expect(codeOfStatus(400)).toBe("BAD_REQUEST");
    expect(codeOfStatus(418)).toBe("BAD_REQUEST");
    expect(codeOfStatus(502)).toBe("INTERNAL_SERVER_ERROR");
  });
});

describe("every API route answers its errors through the one model", () => {
  const routes = apiRoutes();

  it("finds the API's routes (ingest, admin, alerts, metrics, /mcp)", () => {
    const paths = routes.map((r) => `${r.method} ${r.path}`);
    for (const expected of [
      "POST /v1/ingest",
      "POST /v1/admin/projects",
      "DELETE /v1/admin/keys/:key_id",
      "PATCH /v1/admin/projects/:id/alert-rules/:rule",
      "GET /v1/metrics/tools",
      "GET /v1/metrics/alerts",
      "POST /mcp",
    ]) {
      expect(paths).toContain(expected);
    }
    expect(routes.length).toBeGreaterThan(20);
  });

  it("POST /v1/traces is registered, and answers its 401 as OTLP's Status (code 16, UNAUTHENTICATED), not this model", async () => {
    expect(app.routes.some((r) => r.path === "/v1/traces" && r.method === "POST")).toBe(true);
    const res = await fetchWorker("/v1/traces", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(res.status).toBe(401);
    expect(res.headers.get("content-type")).toBe("application/json");
    expect(await res.json()).toEqual({ code: 16, message: `missing bearer key (request id ${res.headers.get("x-request-id")})` });
  });

  it("GET /v1/openapi.json is registered and is the only API route answered without a credential", async () => {
    expect(app.routes.some((r) => r.path === "/v1/openapi.json" && r.method === "GET")).toBe(true);
    const res = await fetchWorker("/v1/openapi.json");
    expect(res.status).toBe(200);
    expect((await res.json()) as object).toHaveProperty("openapi", "3.1.0");
  });

  it("401 UNAUTHORIZED without a key or token, on every route", async () => {
    for (const { method, path } of routes) {
      const res = await fetchWorker(concrete(path), {
        method,
        headers: { "content-type": "application/json" },
        ...(method === "GET" || method === "DELETE" ? {} : { body: "{}" }),
      });
      await expectErrorModel(res, "UNAUTHORIZED", `${method} ${path}`);
    }
  });

  it("401 UNAUTHORIZED with a malformed or a wrong admin token (bearerAuth's refusals included)", async () => {
    for (const authorization of ["Bearer", "Basic abc", "Bearer wrong"]) {
      const res = await fetchWorker("/v1/admin/projects", { headers: { authorization } });
      await expectErrorModel(res, "UNAUTHORIZED", authorization);
      expect(res.headers.get("www-authenticate")).toBe('Bearer realm="mcpulse-admin"');
    }
  });

  it("admin bodies: 415 when not JSON, 400 when malformed or invalid, 404 for an unknown project", async () => {
    const post = (path: string, body: string, contentType = "application/json") =>
      fetchWorker(path, { method: "POST", headers: { ...adminHeaders(), "content-type": contentType }, body });
    await expectErrorModel(await post("/v1/admin/projects", JSON.stringify({ name: "x" }), "text/plain"), "UNSUPPORTED_MEDIA_TYPE", "text/plain");
    await expectErrorModel(await post("/v1/admin/projects", "{not json"), "BAD_REQUEST", "malformed");
    await expectErrorModel(await post("/v1/admin/projects", JSON.stringify({ name: "" })), "BAD_REQUEST", "invalid");
    await expectErrorModel(await post("/v1/admin/projects/prj_missing/keys", JSON.stringify({ kind: "read" })), "NOT_FOUND", "keys of a missing project");
    await expectErrorModel(await post("/v1/admin/projects/prj_missing/alert-rules", "[1]"), "BAD_REQUEST", "a rule body that is not an object");
    await expectErrorModel(await post("/v1/admin/projects/prj_missing/alert-rules", JSON.stringify({ metric: "calls" }), "text/plain"), "UNSUPPORTED_MEDIA_TYPE", "a rule as text");
    await expectErrorModel(
      await post("/v1/admin/projects/prj_missing/alert-destinations", JSON.stringify({ kind: "webhook", url: "https://example.com/h" })),
      "NOT_FOUND",
      "destination of a missing project",
    );
    const del = await fetchWorker("/v1/admin/keys/mp_read_00000000", { method: "DELETE", headers: adminHeaders() });
    await expectErrorModel(del, "NOT_FOUND", "unknown key");
  });

  it("alert rules: 409 CONFLICT for a destination still in use", async () => {
    const p = await createProject();
    const post = (path: string, body: unknown) =>
      fetchWorker(`/v1/admin/projects/${p.project_id}${path}`, { method: "POST", headers: adminHeaders(), body: JSON.stringify(body) });
    const dest = await (await post("/alert-destinations", { kind: "webhook", url: "https://example.com/hook" })).json<{ id: string }>();
    const rule = await post("/alert-rules", { metric: "calls", op: ">", threshold: 1, destinations: [dest.id] });
    expect(rule.status).toBe(201);
    const res = await fetchWorker(`/v1/admin/projects/${p.project_id}/alert-destinations/${dest.id}`, { method: "DELETE", headers: adminHeaders() });
    await expectErrorModel(res, "CONFLICT", "destination in use");
  });

  it("metrics: 400 BAD_REQUEST for a bad parameter, 404 NOT_FOUND for an unknown path, 500 for a fault", async () => {
    const p = await createProject();
    const auth = { authorization: `Bearer ${p.read_key}` };
    await expectErrorModel(await fetchWorker("/v1/metrics/tools?from=yesterday", { headers: auth }), "BAD_REQUEST", "bad date");
    await expectErrorModel(await fetchWorker("/v1/metrics/nothing-here", { headers: auth }), "NOT_FOUND", "unknown path");
    // A fault after the key check: the answer is the bare 500 of the model, never the fault's text.
    const broken = new Proxy(env.DB, {
      get(target, prop, receiver) {
        if (prop !== "prepare") return Reflect.get(target, prop, receiver);
        return (sql: string) => {
          if (/FROM api_keys/i.test(sql)) return target.prepare(sql);
          throw new Error("SECRET detail");
        };
      },
    });
    const worker = (await import("../../src/worker/index.ts")).default;
    const ctx = { waitUntil() {}, passThroughOnException() {}, props: {} } as never;
    const res = await worker.fetch!(new Request("http://worker/v1/metrics/tools", { headers: auth }) as never, { ...env, DB: broken }, ctx);
    await expectErrorModel(res, "INTERNAL_SERVER_ERROR", "fault");
  });

  it("ingest: 401, 415, 413 and 400 carry their codes", async () => {
    const p = await createProject();
    const batch = { batch: [callPayload()] };
    await expectErrorModel(await postIngest(batch, {}), "UNAUTHORIZED", "no key");
    await expectErrorModel(await postIngest(batch, { key: p.ingest_key, contentType: "text/plain" }), "UNSUPPORTED_MEDIA_TYPE", "text");
    await expectErrorModel(await postIngest("{", { key: p.ingest_key }), "BAD_REQUEST", "not JSON");
    await expectErrorModel(await postIngest({ batch: new Array(1001).fill({ v: 2 }) }, { key: p.ingest_key }), "PAYLOAD_TOO_LARGE", "1,001 items");
  });

  it("ingest: 429 TOO_MANY_REQUESTS carries its code and its Retry-After", async () => {
    const p = await createProject();
    await setPayloadBudget(p.project_id, 1);
    expect((await postIngest({ batch: [callPayload()] }, { key: p.ingest_key })).status).toBe(202);
    const refused = await postIngest({ batch: [callPayload()] }, { key: p.ingest_key });
    expect(refused.headers.get("retry-after")).toMatch(/^[1-9]\d*$/);
    await expectErrorModel(refused, "TOO_MANY_REQUESTS", "over budget");
  });
});
