// /mcp end to end (SPEC §6): real MCP clients (SDK 1.x and 2.x, StreamableHTTPClientTransport)
// against the real worker in Miniflare, with a week of traffic through the real ingest and rollup.
// Every tool is called and its figures are compared with the read API's for the same project, range
// and filters; keys of another project see nothing; bad keys get 401; bad arguments are tool errors.
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as HttpV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { demoWorkload } from "./dashboard/demo-data.ts";
import { createProject, startWorker, type RunningWorker } from "./dashboard/start-worker.ts";
import { storedPayloadRows } from "./helpers/stored-rows.ts";
import { sharedLocalAnalytics } from "../../scripts/analytics-local.ts";
import { CALLS_DATASET, MAX_DATA_POINTS_PER_INVOCATION } from "../../src/worker/analytics/calls-dataset.ts";

let worker: RunningWorker;
let project: Awaited<ReturnType<typeof createProject>>;
let other: Awaited<ReturnType<typeof createProject>>;

const TOOL_NAMES = ["list_tools_health", "get_tool", "get_insights", "compare_ranges", "get_clients", "get_sessions", "get_schema_regressions", "get_alerts", "explore"];

beforeAll(async () => {
  // Explore reads the local stand-in for Analytics Engine (an embedded ClickHouse), as `npm run dev` does.
  const analytics = await sharedLocalAnalytics();
  worker = await startWorker({ vars: { ANALYTICS_LOCAL_URL: analytics.url } });
  project = await createProject(worker, "Orders MCP server");
  other = await createProject(worker, "Someone else");
  const { payloads } = demoWorkload(Date.now());
  // At most one data point per call (MAX_DATA_POINTS_PER_INVOCATION a request), so explore counts
  // every tool exactly: a 500-payload request of this week-long workload is grouped, and at some
  // minutes of the day its smallest groups are merged into an `(other)` tool.
  for (let i = 0; i < payloads.length; i += MAX_DATA_POINTS_PER_INVOCATION) {
    const res = await fetch(`${worker.url}/v1/ingest`, {
      method: "POST",
      headers: { authorization: `Bearer ${project.ingest_key}`, "content-type": "application/json" },
      body: JSON.stringify({ batch: payloads.slice(i, i + MAX_DATA_POINTS_PER_INVOCATION) }),
    });
    expect(res.status).toBe(202);
  }
  const deadline = Date.now() + 20_000;
  while ((await storedPayloadRows(worker.db, project.project_id)) < payloads.length) {
    if (Date.now() > deadline) throw new Error("ingest did not land");
    await new Promise((r) => setTimeout(r, 20));
  }
  // Each batch's data points reach the engine after its 202: wait until every call is there.
  const weighted = `SELECT sum(${CALLS_DATASET.doubles.calls}) AS n FROM ${analytics.engine.table} WHERE index1 = '${project.project_id}' FORMAT JSON`;
  const calls = payloads.filter((p) => p.type === "call").length;
  while (Number((await analytics.engine.query(weighted)).data[0]?.n ?? 0) < calls) {
    if (Date.now() > deadline) throw new Error("data points did not land");
    await new Promise((r) => setTimeout(r, 20));
  }
  // An alert rule on the project, so get_alerts has something to answer (SPEC §5).
  const admin = { authorization: `Bearer ${worker.adminToken}`, "content-type": "application/json" };
  const dest = await fetch(`${worker.url}/v1/admin/projects/${project.project_id}/alert-destinations`, {
    method: "POST", headers: admin, body: JSON.stringify({ kind: "webhook", url: "https://alerts.example/hook", name: "ops" }),
  });
  expect(dest.status).toBe(201);
  const { id: destination } = (await dest.json()) as { id: string };
  const rule = await fetch(`${worker.url}/v1/admin/projects/${project.project_id}/alert-rules`, {
    method: "POST", headers: admin,
    body: JSON.stringify({ name: "first calls", metric: "first_call_rate", op: "<", threshold: 0.99, window_hours: 168, min_calls: 1, tool: "*", destinations: [destination] }),
  });
  expect(rule.status, await rule.clone().text()).toBe(201);
  await worker.runRollup();
  await worker.runRollup();
});

afterAll(async () => {
  await worker?.stop();
});

type Connected = { callTool(params: { name: string; arguments?: Record<string, unknown> }): Promise<unknown>; listTools(): Promise<{ tools: unknown[] }>; close(): Promise<void> };

async function connect(version: "1.x" | "2.x", key: string): Promise<Connected> {
  const url = new URL(`${worker.url}/mcp`);
  const requestInit = { headers: { authorization: `Bearer ${key}` } };
  if (version === "1.x") {
    const client = new ClientV1({ name: "e2e-v1", version: "1.0.0" });
    await client.connect(new HttpV1(url, { requestInit }));
    return client as unknown as Connected;
  }
  const client = new ClientV2({ name: "e2e-v2", version: "2.0.0" });
  await client.connect(new HttpV2(url, { requestInit }));
  return client as unknown as Connected;
}

async function api<T>(path: string, key = project.read_key): Promise<T> {
  const res = await fetch(`${worker.url}${path}`, { headers: { authorization: `Bearer ${key}` } });
  expect(res.status, path).toBe(200);
  return (await res.json()) as T;
}

type ToolResult = { isError?: boolean; structuredContent?: Record<string, unknown>; content: { type: string; text?: string }[] };

async function call(client: Connected, name: string, args: Record<string, unknown> = {}): Promise<ToolResult> {
  return (await client.callTool({ name, arguments: args })) as ToolResult;
}

function structured(result: ToolResult): Record<string, unknown> {
  expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
  expect(result.structuredContent).toBeDefined();
  // The text part carries the same JSON, for clients that do not read structuredContent.
  expect(JSON.parse(result.content[0]!.text!)).toEqual(result.structuredContent);
  return result.structuredContent!;
}

type ApiTool = { tool_name: string; calls: number; first_call_rate: number | null; error_rate: number | null; empty_rate: number | null; duration_ms: { p95: number | null } } & Record<string, unknown>;

describe.each(["1.x", "2.x"] as const)("MCP client %s", (version) => {
  it("initializes and lists every tool, read only, with input and output schemas", async () => {
    const client = await connect(version, project.read_key);
    const { tools } = (await client.listTools()) as { tools: { name: string; description: string; inputSchema: { type: string }; outputSchema?: { type: string }; annotations?: { readOnlyHint?: boolean } }[] };
    expect(tools.map((t) => t.name).sort()).toEqual([...TOOL_NAMES].sort());
    for (const t of tools) {
      expect(t.inputSchema.type, t.name).toBe("object");
      expect(t.outputSchema?.type, t.name).toBe("object");
      expect(t.annotations?.readOnlyHint, t.name).toBe(true);
      expect(t.description.length, t.name).toBeGreaterThan(80);
    }
    // The figures are defined as SPEC §2.2 defines them: a retry has different arguments, a
    // same-arguments repeat is never one, a chain starts at every call that is not a retry.
    const health = tools.find((t) => t.name === "list_tools_health")!;
    expect(health.description).not.toMatch(/repeating the previous call/);
    expect(health.description).toContain("has DIFFERENT arguments (args_hash) from c");
    expect(health.description).toContain("A repeat with the same arguments (pagination, polling) is never a retry");
    expect(health.description).toContain("a call without a known session is a chain of one");
    expect(health.description).toContain("chains whose first call was ok, not empty, and not retried");
    const retries = (health.outputSchema as unknown as { properties: { tools: { items: { properties: Record<string, { description?: string }> } } } })
      .properties.tools.items.properties;
    expect(retries.retries?.description).toContain("DIFFERENT arguments");
    expect(retries.first_call_attempts?.description).toMatch(/^chains: /);
    const insights = tools.find((t) => t.name === "get_insights")!;
    expect(insights.description).toContain("from 5 failed (crashed) calls on");
    await client.close();
  });

  it("answers every tool with the read API's figures", async () => {
    const client = await connect(version, project.read_key);
    const apiTools = await api<{ from: string; to: string; as_of: string; tools: ApiTool[] }>("/v1/metrics/tools");
    const { from, to } = apiTools;

    const health = structured(await call(client, "list_tools_health", { limit: 100 }));
    expect([health.from, health.to, health.as_of]).toEqual([from, to, apiTools.as_of]);
    const healthTools = health.tools as ApiTool[];
    expect([...healthTools].sort((a, b) => (a.tool_name < b.tool_name ? -1 : 1))).toEqual([...apiTools.tools].sort((a, b) => (a.tool_name < b.tool_name ? -1 : 1)));
    // Worst first: failed first attempts never increase down the list.
    const failed = healthTools.map((t) => (t.first_call_attempts as number) - (t.first_call_ok as number));
    expect(failed).toEqual([...failed].sort((a, b) => b - a));
    const limited = structured(await call(client, "list_tools_health", { limit: 2 }));
    expect(limited.tools).toEqual(healthTools.slice(0, 2));
    expect([limited.total, limited.truncated]).toEqual([healthTools.length, true]);

    const byClient = structured(await call(client, "list_tools_health", { from, to, client: "cursor", limit: 100 }));
    const apiByClient = await api<{ tools: ApiTool[] }>(`/v1/metrics/tools?from=${from}&to=${to}&client=cursor`);
    expect((byClient.tools as ApiTool[]).length).toBe(apiByClient.tools.length);
    for (const row of apiByClient.tools) expect((byClient.tools as ApiTool[]).find((t) => t.tool_name === row.tool_name)).toEqual(row);

    const tool = structured(await call(client, "get_tool", { name: "search_orders" }));
    const apiOne = await api<{ tools: ApiTool[] }>(`/v1/metrics/tools?tool=search_orders`);
    expect(tool.tool).toEqual(apiOne.tools[0]);
    expect(tool.clients).toEqual((await api<{ clients: unknown[] }>(`/v1/metrics/clients?tool=search_orders`)).clients.slice(0, 20));
    expect(tool.pairs).toEqual((await api<{ pairs: unknown[] }>(`/v1/metrics/pairs?tool=search_orders`)).pairs.slice(0, 20));
    const regressions = await api<{ regressions: { tool_name: string }[] }>(`/v1/metrics/schema-regressions?tool=search_orders`);
    expect(tool.schema_change).toEqual(regressions.regressions[0] ?? null);
    expect(tool.schema_change).not.toBeNull();
    expect(structured(await call(client, "get_tool", { name: "no_such_tool" })).tool).toBeNull();

    const insights = structured(await call(client, "get_insights", { limit: 100 }));
    expect(insights.insights).toEqual((await api<{ insights: unknown[] }>("/v1/metrics/insights")).insights);
    expect((insights.insights as unknown[]).length).toBeGreaterThan(0);

    const clients = structured(await call(client, "get_clients", { from, to }));
    expect(clients.clients).toEqual((await api<{ clients: unknown[] }>(`/v1/metrics/clients?from=${from}&to=${to}`)).clients);

    const sessions = structured(await call(client, "get_sessions", { client: "cursor" }));
    const { as_of: _asOf, ...apiSessions } = await api<Record<string, unknown>>("/v1/metrics/sessions?client=cursor");
    expect(sessions).toMatchObject(apiSessions);

    const alerts = structured(await call(client, "get_alerts", { limit: 100 }));
    const apiAlerts = await api<{ as_of: string; rules: { id: string; states: { state: string }[] }[]; deliveries: unknown[] }>("/v1/metrics/alerts");
    expect(alerts.rules).toEqual(apiAlerts.rules);
    expect(alerts.deliveries).toEqual(apiAlerts.deliveries.slice(0, 100));
    expect((alerts.rules as { states: unknown[] }[])[0]!.states.length).toBeGreaterThan(0);
    expect(JSON.stringify(alerts)).not.toContain("alerts.example");

    const schema = structured(await call(client, "get_schema_regressions", {}));
    expect((schema.regressions as unknown[]).length).toBe((await api<{ regressions: unknown[] }>("/v1/metrics/schema-regressions")).regressions.length);

    // compare_ranges: each side equals /tools for that range.
    const aFrom = from;
    const aTo = new Date(Date.parse(from) + 2 * 86_400_000).toISOString().slice(0, 10);
    const bFrom = new Date(Date.parse(from) + 3 * 86_400_000).toISOString().slice(0, 10);
    const compared = structured(await call(client, "compare_ranges", { a_from: aFrom, a_to: aTo, b_from: bFrom, b_to: to, limit: 100 }));
    const [aApi, bApi] = await Promise.all([api<{ tools: ApiTool[] }>(`/v1/metrics/tools?from=${aFrom}&to=${aTo}`), api<{ tools: ApiTool[] }>(`/v1/metrics/tools?from=${bFrom}&to=${to}`)]);
    type Compared = { tool_name: string; calls: { a: number; b: number; change: number }; first_call_rate: { a: number | null; b: number | null }; p95_ms: { a: number | null; b: number | null } };
    for (const row of compared.tools as Compared[]) {
      const a = aApi.tools.find((t) => t.tool_name === row.tool_name);
      const b = bApi.tools.find((t) => t.tool_name === row.tool_name);
      expect(row.calls, row.tool_name).toEqual({ a: a?.calls ?? 0, b: b?.calls ?? 0, change: (b?.calls ?? 0) - (a?.calls ?? 0) });
      expect([row.first_call_rate.a, row.first_call_rate.b]).toEqual([a?.first_call_rate ?? null, b?.first_call_rate ?? null]);
      expect([row.p95_ms.a, row.p95_ms.b]).toEqual([a?.duration_ms.p95 ?? null, b?.duration_ms.p95 ?? null]);
    }
    await client.close();
  });

  it("answers explore with GET /v1/explore's answer for the same query", async () => {
    const client = await connect(version, project.read_key);
    const apiTools = await api<{ from: string; to: string; tools: ApiTool[] }>("/v1/metrics/tools");
    const { from, to } = apiTools;
    const args = { measures: ["calls", "error_rate", "p95", "distinct_args"], by: ["tool", "client"], filters: { outcome: ["ok", "bad_args"] }, from, to, limit: 5 };
    const answer = structured(await call(client, "explore", args));
    const viaApi = await api<Record<string, unknown>>(
      `/v1/explore?measure=calls,error_rate,p95,distinct_args&by=tool,client&filter[outcome]=ok&filter[outcome]=bad_args&from=${from}&to=${to}&limit=5`,
    );
    expect(answer).toEqual(viaApi);
    expect(answer).toMatchObject({ source: "analytics-engine", sampled: false, approximate: ["distinct_args"] });
    const rows = answer.rows as Record<string, unknown>[];
    expect(rows).toHaveLength(6);
    expect(rows[5]).toMatchObject({ tool: "(other)", client: "(other)" });

    // Calls per tool over whole days equal the rollups' (every point unsampled locally).
    const perTool = structured(await call(client, "explore", { by: ["tool"], from, to, limit: 200 }));
    const counted = Object.fromEntries((perTool.rows as { tool: string; calls: number }[]).map((r) => [r.tool, r.calls]));
    expect(counted).toEqual(Object.fromEntries(apiTools.tools.filter((t) => t.calls > 0).map((t) => [t.tool_name, t.calls])));
    expect(Object.keys(counted).length).toBeGreaterThan(3);

    // Another project's key sees none of these calls.
    const theirs = await connect(version, other.read_key);
    expect(structured(await call(theirs, "explore", { by: ["tool"], from, to })).rows).toEqual([]);
    await theirs.close();
    await client.close();
  });

  it("answers a bad or hostile explore argument with a tool error naming what is allowed", async () => {
    const client = await connect(version, project.read_key);
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ measures: ["calls') --"] }, /calls.*error_rate.*distinct_sessions/s],
      [{ by: ["tool", "client", "colo"] }, /<=2 items|at most 2/],
      [{ by: ["index1"] }, /client_version/],
      [{ filters: { tool: ["a\u0000b"] } }, /filter\[tool\]/],
      [{ filters: { project: ["prj_other"] } }, /project|unrecognized|Unrecognized/],
      [{ limit: 201 }, /<=200|from 1 to 200/],
      [{ grain: "minute" }, /hour/],
      [{ from: "2026-02-30" }, /'from' and 'to' must be dates/],
      [{ from: "2020-01-01", to: "2020-01-02", measures: ["distinct_args"] }, /day rows/],
      [{ project_id: "prj_other" }, /project_id|unrecognized|Unrecognized/],
    ];
    for (const [args, allowed] of cases) {
      let result: ToolResult;
      try {
        result = await call(client, "explore", args);
      } catch (err) {
        // Some SDK versions answer arguments that break the input schema with a JSON-RPC error (-32602).
        expect(String(err), JSON.stringify(args)).toMatch(/-32602|invalid/i);
        expect(String(err), JSON.stringify(args)).toMatch(allowed);
        continue;
      }
      expect(result.isError, JSON.stringify(args)).toBe(true);
      const text = result.content.map((c) => c.text ?? "").join(" ");
      expect(text, JSON.stringify(args)).toMatch(allowed);
      expect(text).not.toMatch(/\bat .*\.(ts|js):\d+/);
      expect(text).not.toContain("prj_other");
    }
    // Just at the limits: 200 groups and two dimensions are answered.
    expect(structured(await call(client, "explore", { by: ["tool", "outcome"], limit: 200 })).source).toBe("analytics-engine");
    await client.close();
  });

  it("gives a read key of another project nothing of this one", async () => {
    const client = await connect(version, other.read_key);
    const health = structured(await call(client, "list_tools_health", { limit: 100 }));
    expect(health.tools).toEqual([]);
    expect(structured(await call(client, "get_tool", { name: "search_orders" })).tool).toBeNull();
    expect(JSON.stringify(structured(await call(client, "get_insights")))).not.toContain("search_orders");
    expect(structured(await call(client, "get_alerts")).rules).toEqual([]);
    await client.close();
  });

  it("answers bad arguments with a tool error, never a 500 or a stack trace", async () => {
    const client = await connect(version, project.read_key);
    for (const [name, args] of [
      ["list_tools_health", { from: "2026-13-45" }],
      ["list_tools_health", { from: "2026-02-30" }],
      ["list_tools_health", { from: "2026-12-01", to: "2026-11-01" }],
      ["list_tools_health", { from: "2020-01-01", to: "2026-01-01" }],
      ["list_tools_health", { limit: 0 }],
      ["list_tools_health", { limit: 101 }],
      ["get_tool", { name: "x".repeat(201) }],
      ["get_tool", {}],
      ["get_clients", { tool: "" }],
      ["compare_ranges", { a_from: "2026-01-01" }],
    ] as const) {
      let result: ToolResult | undefined;
      try {
        result = await call(client, name, args as Record<string, unknown>);
      } catch (err) {
        // Some SDK versions answer invalid arguments with a JSON-RPC error (-32602) instead.
        expect(String(err), `${name} ${JSON.stringify(args)}`).toMatch(/-32602|invalid/i);
        continue;
      }
      expect(result.isError, `${name} ${JSON.stringify(args)}`).toBe(true);
      const text = result.content.map((c) => c.text ?? "").join(" ");
      expect(text).not.toMatch(/\bat .*\.(ts|js):\d+/);
      expect(text).not.toContain("x".repeat(50));
    }
    // A name just at the cap (200 characters) is a valid argument.
    expect(structured(await call(client, "get_tool", { name: "x".repeat(200) })).tool).toBeNull();
    await client.close();
  });
});

describe("/mcp authentication", () => {
  const initialize = (authorization?: string) =>
    fetch(`${worker.url}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...(authorization ? { authorization } : {}) },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } }),
    });

  it("answers 401 with WWW-Authenticate: Bearer without a key, with an ingest key, or a revoked one", async () => {
    for (const authorization of [undefined, `Bearer ${project.ingest_key}`, "Bearer mp_read_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "Basic abc"]) {
      const res = await initialize(authorization);
      expect(res.status, String(authorization)).toBe(401);
      expect(res.headers.get("www-authenticate"), String(authorization)).toMatch(/^Bearer\b/);
    }
    expect((await initialize(`Bearer ${project.read_key}`)).status).toBe(200);
  });

  it("refuses a body over 64 KiB without parsing it", async () => {
    const res = await fetch(`${worker.url}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: `Bearer ${project.read_key}` },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "get_tool", arguments: { name: "x".repeat(70_000) } } }),
    });
    expect(res.status).toBe(413);
  });
});
