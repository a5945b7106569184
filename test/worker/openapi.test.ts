// The read API's OpenAPI document (GET /v1/openapi.json): a well-formed OpenAPI 3.1 document that
// lists every read route the app answers, with the parameters each route accepts, and response
// schemas that every real answer over a seeded project fits — no field missing, none undeclared.
// The MCP tools' output schemas are built from the very schema objects the routes declare.
import { env } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { AlertDelivery, AlertRuleAnswer, AlertsReport } from "../../src/worker/alerts/report.ts";
import { exploreAnswerSchema } from "../../src/worker/analytics/explore.ts";
import { app } from "../../src/worker/app.ts";
import { MCP_TOOLS } from "../../src/worker/mcp/tools.ts";
import {
  AgreementReport, ClientRow, ClientsReport, DescriptionsReport, Insight, InsightsReport, PairRow, PairsReport, SchemaRegression,
  SchemaRegressionsReport, SessionsReport, TimeseriesReport, ToolRow, ToolsReport,
} from "../../src/worker/metrics/answers.ts";
import { READ_APPS, readApiDocument } from "../../src/worker/routes/openapi.ts";
import { admin, createDestination, createRule } from "./alerts/helpers.ts";
import { createProject } from "./helpers/projects.ts";
import {
  DAY, HOUR, dayMs, histogramOf, seedAgreement, seedDeclaration, seedHour, seedPair, seedRegistered, seedSession, seedVersion, setAsOf,
} from "./metrics/seed.ts";

type Json = Record<string, unknown>;
type Schema = Json;

const HTTP_METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];
const JSON_TYPES = ["null", "boolean", "object", "array", "number", "integer", "string"];

async function fetchJson(path: string, key?: string): Promise<{ status: number; body: Json }> {
  const res = await exports.default.fetch(`http://worker${path}`, key ? { headers: { authorization: `Bearer ${key}` } } : {});
  return { status: res.status, body: (await res.json()) as Json };
}

/** Every JSON Schema in `schema` (itself included), depth first. */
function* schemasIn(schema: Schema): Generator<Schema> {
  yield schema;
  for (const s of Object.values((schema.properties as Record<string, Schema>) ?? {})) yield* schemasIn(s);
  if (schema.items) yield* schemasIn(schema.items as Schema);
  if (typeof schema.additionalProperties === "object") yield* schemasIn(schema.additionalProperties as Schema);
  for (const s of (schema.anyOf as Schema[]) ?? []) yield* schemasIn(s);
  for (const s of (schema.oneOf as Schema[]) ?? []) yield* schemasIn(s);
}

/** The JSON type of a value, as JSON Schema names it. */
function jsonType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
}

/**
 * Where `value` does not fit `schema`, strictly: every declared required field present, every field
 * present declared (or allowed by `additionalProperties`), every value of its declared type, enum,
 * pattern and length.
 */
function misfits(value: unknown, schema: Schema, at = "$"): string[] {
  if (schema.anyOf) {
    const options = schema.anyOf as Schema[];
    return options.some((s) => misfits(value, s, at).length === 0) ? [] : [`${at}: fits none of anyOf`];
  }
  const problems: string[] = [];
  const type = jsonType(value);
  if (schema.type !== undefined) {
    const types = [schema.type].flat() as string[];
    if (!types.includes(type) && !(type === "integer" && types.includes("number"))) return [`${at}: ${type}, not ${types.join("|")}`];
  }
  if (schema.enum && !(schema.enum as unknown[]).includes(value)) problems.push(`${at}: not among the enum`);
  if (typeof value === "string") {
    if (schema.pattern && !new RegExp(schema.pattern as string).test(value)) problems.push(`${at}: does not match ${schema.pattern}`);
    if (typeof schema.maxLength === "number" && [...value].length > schema.maxLength) problems.push(`${at}: too long`);
  }
  if (Array.isArray(value) && schema.items) value.forEach((v, i) => problems.push(...misfits(v, schema.items as Schema, `${at}[${i}]`)));
  if (type === "object") {
    const object = value as Json;
    const properties = (schema.properties as Record<string, Schema>) ?? {};
    for (const name of (schema.required as string[]) ?? []) if (!(name in object)) problems.push(`${at}.${name}: missing`);
    for (const [name, v] of Object.entries(object)) {
      if (properties[name]) problems.push(...misfits(v, properties[name], `${at}.${name}`));
      else if (typeof schema.additionalProperties === "object") problems.push(...misfits(v, schema.additionalProperties as Schema, `${at}.${name}`));
      else problems.push(`${at}.${name}: not declared`);
    }
  }
  return problems;
}

/** The read routes as the app registered them: handlers under the read apps' mounts, middleware left out. */
function registeredReadRoutes(): string[] {
  const paths = new Set<string>();
  for (const r of app.routes) {
    if (r.method !== "GET" || r.path.endsWith("*")) continue;
    if (Object.keys(READ_APPS).some((mount) => r.path === mount || r.path.startsWith(`${mount}/`))) paths.add(r.path.replace(/\/$/, ""));
  }
  return [...paths].sort();
}

type Operation = { parameters?: Json[]; responses: Record<string, { description: string; content?: Record<string, { schema: Schema }> }>; security?: Json[] };
type Document = { openapi: string; info: Json; paths: Record<string, Record<string, Operation>>; components: { securitySchemes: Record<string, Json> } };

const document = readApiDocument() as unknown as Document;
const operations = () => Object.entries(document.paths).map(([path, item]) => ({ path, op: item.get as Operation }));
const answerSchema = (path: string) => document.paths[path]?.get?.responses["200"]?.content?.["application/json"]?.schema as Schema;

/** Each route's Zod schema of its 200 answer, as declared to @hono/zod-openapi (the registries' own objects). */
function declaredAnswers(): Map<string, z.ZodType> {
  const out = new Map<string, z.ZodType>();
  for (const [mount, readApp] of Object.entries(READ_APPS)) {
    for (const def of readApp.openAPIRegistry.definitions) {
      if (def.type !== "route") continue;
      const path = `${mount}${def.route.path}`.replace(/\/$/, "");
      const ok = def.route.responses[200] as { content?: Record<string, { schema: z.ZodType }> } | undefined;
      out.set(path, ok?.content?.["application/json"]?.schema as z.ZodType);
    }
  }
  return out;
}

describe("GET /v1/openapi.json", () => {
  it("serves the document, without a key, as JSON the same as the routes' own", async () => {
    const res = await exports.default.fetch("http://worker/v1/openapi.json");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(res.headers.get("cache-control")).toBe("public, max-age=300");
    expect(await res.json()).toEqual(JSON.parse(JSON.stringify(document)));
  });

  it("is a well-formed OpenAPI 3.1 document", () => {
    expect(document.openapi).toBe("3.1.0");
    expect(typeof document.info.title).toBe("string");
    expect(typeof document.info.version).toBe("string");
    expect(document.components.securitySchemes.readKey).toEqual(expect.objectContaining({ type: "http", scheme: "bearer" }));
    for (const [path, item] of Object.entries(document.paths)) {
      expect(path).toMatch(/^\/v1\//);
      for (const method of Object.keys(item)) expect(HTTP_METHODS).toContain(method);
    }
    for (const { path, op } of operations()) {
      const names = new Set<string>();
      for (const p of op.parameters ?? []) {
        expect(p.in, path).toBe("query");
        expect(typeof p.name).toBe("string");
        expect(names.has(p.name as string), `${path}: ${p.name} declared twice`).toBe(false);
        names.add(p.name as string);
        expect(p.schema).toBeTypeOf("object");
      }
      for (const requirement of op.security ?? []) for (const scheme of Object.keys(requirement)) expect(document.components.securitySchemes).toHaveProperty(scheme);
      expect(Object.keys(op.responses)).toContain("200");
      for (const [status, response] of Object.entries(op.responses)) {
        expect(status).toMatch(/^[1-5]\d\d$/);
        expect(typeof response.description, `${path} ${status}`).toBe("string");
        for (const [mediaType, content] of Object.entries(response.content ?? {})) {
          expect(mediaType).toBe("application/json");
          for (const s of schemasIn(content.schema)) {
            for (const t of [s.type ?? []].flat()) expect(JSON_TYPES, `${path} ${status}`).toContain(t);
            if (s.type === "array") expect(s.items, `${path}: an array without items`).toBeDefined();
            for (const r of (s.required as string[]) ?? []) expect(s.properties, `${path}: required ${r} undeclared`).toHaveProperty(r);
          }
        }
      }
      // No reference to a component that is not there.
      for (const ref of JSON.stringify(op).matchAll(/"\$ref":"#\/components\/(\w+)\/([^"]+)"/g)) {
        expect((document.components as Record<string, Json>)[ref[1] as string]).toHaveProperty(ref[2] as string);
      }
    }
  });

  it("lists every read route the app answers, and no other", () => {
    const documented = Object.keys(document.paths).sort();
    expect(documented).toEqual(registeredReadRoutes());
    expect(documented).toContain("/v1/metrics/tools");
    expect(documented).toContain("/v1/metrics/alerts");
    expect(documented).toContain("/v1/explore");
  });

  it("declares, per route, exactly the parameters the route accepts (its 400 names the same list)", async () => {
    const p = await createProject();
    for (const { path, op } of operations()) {
      const declared = (op.parameters ?? []).map((x) => x.name as string).sort();
      const { status, body } = await fetchJson(`${path}?not_a_parameter=1`, p.read_key);
      if (declared.length === 0) {
        // A route without parameters (alerts) ignores the query, as it always has.
        expect(status, path).toBe(200);
        continue;
      }
      expect(status, path).toBe(400);
      const allowed = /^unknown parameter \(allowed: (.*)\)$/.exec(body.error as string)?.[1]?.split(", ").sort();
      expect(allowed, path).toEqual(declared);
      expect(misfits(body, op.responses["400"]?.content?.["application/json"]?.schema as Schema), path).toEqual([]);
    }
  });

  it("declares the 401 every read route answers without a key", async () => {
    for (const { path, op } of operations()) {
      const { status, body } = await fetchJson(path);
      expect(status, path).toBe(401);
      expect(misfits(body, op.responses["401"]?.content?.["application/json"]?.schema as Schema), path).toEqual([]);
    }
  });

  it("describes what every read route answers over a seeded project: each answer fits its schema, field for field", async () => {
    const p = await createProject();
    const id = p.project_id;
    const today = Math.floor(Date.now() / DAY) * DAY;
    const day = today - 2 * DAY;
    const date = new Date(day).toISOString().slice(0, 10);
    const oldDay = today - 120 * DAY;
    await setAsOf(Date.now());
    // Tools: one with crashes (an insight), one without args hashes (not_measurable), one registered and dead, one with a policy.
    await seedHour({ projectId: id, hourMs: day + HOUR, tool: "search", client: "cursor", histogram: histogramOf([5, 40, 2500]), counters: { calls: 30, ok: 20, crashed: 6, bad_args: 4, first_call_attempts: 28, first_call_ok: 18, retries: 2, response_bytes_sum: 9000, duration_ms_sum: 2545 } });
    await seedHour({ projectId: id, hourMs: day + 2 * HOUR, tool: "fetch", client: "claude", counters: { calls: 4, ok: 4, empty: 1, calls_without_args_hash: 4, calls_without_session: 1 } });
    await seedHour({ projectId: id, hourMs: oldDay + HOUR, tool: "search", client: "cursor", counters: { calls: 7, ok: 7, first_call_attempts: 7, first_call_ok: 7 } });
    await seedRegistered(id, "search", { schemaHash: "bbbbbbbbbbbb", descriptionNorm: "nnnnnnnnnnnn" });
    await seedRegistered(id, "unused", { descriptionNorm: "nnnnnnnnnnnn" });
    await seedRegistered(id, "guarded", { requiresAuthorization: true });
    // Descriptions (churn) and a schema change (regressions).
    await seedVersion(id, "search", { schemaHash: "aaaaaaaaaaaa", descriptionHash: "d1", firstSeenMs: day - 9 * DAY, lastSeenMs: day - 5 * DAY });
    await seedVersion(id, "search", { schemaHash: "bbbbbbbbbbbb", descriptionHash: "d1", firstSeenMs: day - DAY, lastSeenMs: day });
    await seedVersion(id, "search", { schemaHash: "bbbbbbbbbbbb", descriptionHash: "d2", firstSeenMs: day, lastSeenMs: day + HOUR });
    await seedPair(id, date, "cursor", "search", "fetch", 3);
    await seedSession(id, "s1", { firstSeenMs: day + HOUR, client: "cursor", calls: 30, responseBytes: 9000, schemaBytes: 1600 });
    await seedAgreement(id, date, "order_id", "fetch", "search", 10, 2);
    await seedDeclaration(id, "customer_id", "search");
    // Alerts: a rule with a state, a destination, and a test notification with an attempt.
    const destination = await createDestination(id, { kind: "webhook", url: "https://hooks.example.com/x" });
    const rule = await createRule(id, { metric: "error_rate", op: ">", threshold: 0.1, destinations: [destination.id] });
    await env.DB.prepare(
      "INSERT INTO alert_states (rule_id, scope_key, project_id, scope_tool, scope_client, state, breaches, since_ms, value, last_evaluated_ms, revision, eval_id) VALUES (?1, '[null,null]', ?2, NULL, NULL, 'firing', 2, ?3, 0.33, ?3, 1, 'e1')",
    ).bind(rule.id, id, Date.now()).run();
    expect((await admin("POST", `${id}/alert-destinations/${destination.id}/test`)).status).toBe(202);
    const { results } = await env.DB.prepare("SELECT notification_id FROM alert_outbox WHERE project_id = ?1").bind(id).all<{ notification_id: number }>();
    await env.DB.prepare("INSERT INTO alert_delivery_attempts (notification_id, attempt, project_id, attempted_at_ms, http_status, latency_ms, error_class) VALUES (?1, 1, ?2, ?3, 500, 120, 'http_5xx')")
      .bind(results[0]?.notification_id, id, Date.now()).run();

    const old = new Date(oldDay).toISOString().slice(0, 10);
    const queries: Record<string, string> = {
      "/v1/metrics/tools": `?from=${date}&to=${date}`,
      "/v1/metrics/clients": `?from=${date}&to=${date}`,
      "/v1/metrics/pairs": `?from=${date}&to=${date}`,
      "/v1/metrics/sessions": `?from=${date}&to=${date}`,
      "/v1/metrics/timeseries": `?from=${date}&to=${date}&grain=hour`,
      "/v1/metrics/descriptions": "",
      "/v1/metrics/agreement": `?from=${date}&to=${date}`,
      "/v1/metrics/insights": `?from=${date}&to=${date}`,
      "/v1/metrics/schema-regressions": "",
      "/v1/metrics/alerts": "",
      // Past Analytics Engine's 90 days: answered from D1's day rows.
      "/v1/explore": `?from=${old}&to=${old}&by=tool&measure=calls,error_rate`,
    };
    expect(Object.keys(queries).sort()).toEqual(Object.keys(document.paths).sort());
    const zodAnswers = declaredAnswers();
    for (const [path, query] of Object.entries(queries)) {
      const { status, body } = await fetchJson(`${path}${query}`, p.read_key);
      expect(status, path).toBe(200);
      expect(misfits(body, answerSchema(path)), path).toEqual([]);
      expect(zodAnswers.get(path)?.safeParse(body).success, path).toBe(true);
      // Not an empty answer: every list of the seeded project has rows.
      for (const [field, value] of Object.entries(body)) if (Array.isArray(value) && field !== "approximate") expect(value.length, `${path} ${field}`).toBeGreaterThan(0);
    }
  });

  it("would catch an answer with a field its schema does not declare, or without one it requires", () => {
    const schema = answerSchema("/v1/metrics/pairs");
    expect(misfits({ as_of: null, pairs: [{ from_tool: "a", to_tool: "b", count: 1 }] }, schema)).toEqual([]);
    expect(misfits({ as_of: null, pairs: [{ from_tool: "a", to_tool: "b", count: 1, extra: 1 }] }, schema)).toEqual(["$.pairs[0].extra: not declared"]);
    expect(misfits({ as_of: null, pairs: [{ from_tool: "a", to_tool: "b" }] }, schema)).toEqual(["$.pairs[0].count: missing"]);
    expect(misfits({ as_of: 1, pairs: [] }, schema)).toEqual(["$.as_of: integer, not string|null"]);
  });
});

describe("one schema per answer", () => {
  it("the routes declare the answers' schemas themselves", () => {
    const declared = declaredAnswers();
    expect(declared.get("/v1/metrics/tools")).toBe(ToolsReport);
    expect(declared.get("/v1/metrics/clients")).toBe(ClientsReport);
    expect(declared.get("/v1/metrics/pairs")).toBe(PairsReport);
    expect(declared.get("/v1/metrics/sessions")).toBe(SessionsReport);
    expect(declared.get("/v1/metrics/timeseries")).toBe(TimeseriesReport);
    expect(declared.get("/v1/metrics/descriptions")).toBe(DescriptionsReport);
    expect(declared.get("/v1/metrics/agreement")).toBe(AgreementReport);
    expect(declared.get("/v1/metrics/insights")).toBe(InsightsReport);
    expect(declared.get("/v1/metrics/schema-regressions")).toBe(SchemaRegressionsReport);
    expect(declared.get("/v1/metrics/alerts")).toBe(AlertsReport);
    expect(declared.get("/v1/explore")).toBe(exploreAnswerSchema);
  });

  it("the MCP tools' output schemas are built from the same objects", () => {
    const tool = (name: string) => {
      const found = MCP_TOOLS.find((t) => t.name === name);
      if (!found) throw new Error(`no tool ${name}`);
      return found.outputSchema.shape as Record<string, z.ZodType>;
    };
    const element = (s: z.ZodType | undefined) => (s as z.ZodArray).element;
    const inner = (s: z.ZodType | undefined) => (s as z.ZodNullable).unwrap();
    expect(element(tool("list_tools_health").tools)).toBe(ToolRow);
    expect(element(ToolsReport.shape.tools)).toBe(ToolRow);
    expect(inner(tool("get_tool").tool)).toBe(ToolRow);
    expect(element(tool("get_tool").clients)).toBe(ClientRow);
    expect(element(tool("get_tool").pairs)).toBe(PairRow);
    expect(element(PairsReport.shape.pairs)).toBe(PairRow);
    expect(inner(tool("get_tool").schema_change)).toBe(SchemaRegression);
    expect(element(tool("get_insights").insights)).toBe(Insight);
    expect(element(InsightsReport.shape.insights)).toBe(Insight);
    expect(element(tool("get_clients").clients)).toBe(ClientRow);
    expect(element(ClientsReport.shape.clients)).toBe(ClientRow);
    for (const [field, schema] of Object.entries(SessionsReport.shape)) expect(tool("get_sessions")[field], field).toBe(schema);
    expect(element(tool("get_schema_regressions").regressions)).toBe(SchemaRegression);
    expect(element(SchemaRegressionsReport.shape.regressions)).toBe(SchemaRegression);
    expect(element(tool("get_alerts").rules)).toBe(AlertRuleAnswer);
    expect(element(tool("get_alerts").deliveries)).toBe(AlertDelivery);
    expect(element(AlertsReport.shape.rules)).toBe(AlertRuleAnswer);
    expect(MCP_TOOLS.find((t) => t.name === "explore")?.outputSchema).toBe(exploreAnswerSchema);
  });
});
