// End to end (SPEC §10): an MCP server instrumented by hand to the OTel GenAI/MCP semantic
// conventions, with the real OpenTelemetry JS SDK and its OTLP exporters — protobuf
// (exporter-trace-otlp-proto, key in x-mcpulse-key) and JSON (exporter-trace-otlp-http, key as a
// bearer) — sending to the real worker in Miniflare. After the rollup, the read API's figures equal
// the truth taken from the same spans (an in-memory exporter beside the OTLP one): tool, outcome,
// latency, client and session; the non-tool spans come back in partial_success and are never counted.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { context, diag, DiagLogLevel, SpanKind, SpanStatusCode, trace, type Tracer } from "@opentelemetry/api";
import { OTLPTraceExporter as ProtoExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { OTLPTraceExporter as JsonExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, InMemorySpanExporter, SimpleSpanProcessor, TracerProvider, type ReadableSpan, type SpanExporter } from "@opentelemetry/sdk-trace";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from "@modelcontextprotocol/sdk/types.js";
import { createProject, startWorker, type RunningWorker } from "./dashboard/start-worker.ts";

let worker: RunningWorker;
const partialSuccesses: string[] = [];

beforeAll(async () => {
  worker = await startWorker();
  // The exporters report partial_success through OTel's diagnostic logger.
  diag.setLogger(
    {
      error: () => {},
      warn: (message: string, ...args: unknown[]) => {
        if (message.startsWith("Received Partial Success response")) partialSuccesses.push(String(args[0]));
      },
      info: () => {},
      debug: () => {},
      verbose: () => {},
    },
    DiagLogLevel.WARN,
  );
});
afterAll(async () => {
  diag.disable();
  await worker?.stop();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const text = (value: string) => ({ content: [{ type: "text" as const, text: value }] });

/**
 * A low-level MCP server whose tools/call and tools/list handlers open SERVER spans as the semantic
 * conventions describe (mcp.method.name, gen_ai.tool.name, mcp.session.id, error.type…); each tool
 * call also opens an INTERNAL child span for its backend work (not a tool call).
 */
function instrumentedServer(tracer: Tracer, conversationId: string, recordArguments: boolean): Server {
  const server = new Server({ name: "weather", version: "3.1.0" }, { capabilities: { tools: {} } });
  const common = () => ({
    "mcp.session.id": conversationId,
    "mcp.protocol.version": "2025-06-18",
    "mcp.client.name": server.getClientVersion()?.name ?? "",
    "mcp.client.version": server.getClientVersion()?.version ?? "",
    "network.transport": "pipe",
  });
  server.setRequestHandler(ListToolsRequestSchema, async () => {
    const span = tracer.startSpan("tools/list", { kind: SpanKind.SERVER, attributes: { "mcp.method.name": "tools/list", ...common() } });
    span.end();
    return { tools: [{ name: "get_weather", inputSchema: { type: "object" } }, { name: "refund", inputSchema: { type: "object" } }, { name: "export", inputSchema: { type: "object" } }] };
  });
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const name = request.params.name;
    const span = tracer.startSpan(`tools/call ${name}`, {
      kind: SpanKind.SERVER,
      attributes: { "mcp.method.name": "tools/call", "gen_ai.tool.name": name, "gen_ai.operation.name": "execute_tool", ...common() },
    });
    if (recordArguments) span.setAttribute("gen_ai.tool.call.arguments", JSON.stringify(request.params.arguments ?? {}));
    const ctx = trace.setSpan(context.active(), span);
    try {
      const work = tracer.startSpan("forecast backend", { kind: SpanKind.INTERNAL }, ctx);
      await sleep(name === "get_weather" ? 25 : 5);
      work.end();
      const args = request.params.arguments ?? {};
      if (name === "get_weather") {
        if (typeof args.city !== "string") throw new McpError(ErrorCode.InvalidParams, "city must be a string");
        return text(`sunny in ${args.city}`);
      }
      if (name === "refund") {
        span.setAttribute("error.type", "tool_error");
        return { ...text("not refundable"), isError: true };
      }
      throw new Error("backend down");
    } catch (err) {
      if (err instanceof McpError) {
        span.setAttribute("error.type", String(err.code));
        span.setAttribute("rpc.response.status_code", String(err.code));
      } else {
        span.setAttribute("error.type", err instanceof Error ? err.name : "_OTHER");
      }
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw err;
    } finally {
      span.end();
    }
  });
  return server;
}

/** Two conversations of two clients against the instrumented server, then every span exported. */
async function runScenario(exporter: SpanExporter, recordArguments: boolean): Promise<ReadableSpan[]> {
  const truth = new InMemorySpanExporter();
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ "service.name": "weather-mcp", "service.version": "3.1.0" }),
    spanProcessors: [new BatchSpanProcessor({ exporter, scheduledDelayMillis: 60_000, maxExportBatchSize: 512 }), new SimpleSpanProcessor({ exporter: truth })],
  });
  const tracer = provider.getTracer("hand-instrumented-mcp");
  for (const [clientName, conversation] of [["alice-client", "conv-alice"], ["bob-client", "conv-bob"]] as const) {
    const server = instrumentedServer(tracer, conversation, recordArguments);
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client({ name: clientName, version: "2.0.0" });
    await client.connect(clientSide);
    await client.listTools();
    await client.callTool({ name: "get_weather", arguments: { city: 7 } }).catch(() => undefined); // bad_args
    await client.callTool({ name: "get_weather", arguments: { city: "Paris" } }); // ok (a retry, when arguments are recorded)
    await client.callTool({ name: "get_weather", arguments: { city: "Paris" } }); // ok, a same-arguments repeat
    await client.callTool({ name: "refund", arguments: {} }); // tool_error
    await client.callTool({ name: "export", arguments: {} }).catch(() => undefined); // crashed
    await client.close();
  }
  await provider.forceFlush();
  const spans = truth.getFinishedSpans();
  await provider.shutdown();
  return spans;
}

type ToolRow = {
  tool_name: string; calls: number; ok: number; bad_args: number; tool_error: number; crashed: number; retries: number;
  first_call_rate: number | null; calls_without_args_hash: number; not_measurable?: string[]; duration_ms: { p50: number | null; p95: number | null; p99: number | null };
};

async function readApi<T>(path: string, readKey: string): Promise<T> {
  const res = await fetch(`${worker.url}${path}`, { headers: { authorization: `Bearer ${readKey}` } });
  expect(res.status, path).toBe(200);
  return (await res.json()) as T;
}

/** The read API's tools once the rollup has folded in `calls` calls (ingest writes after its answer). */
async function toolsAfterRollup(readKey: string, calls: number): Promise<ToolRow[]> {
  let tools: ToolRow[] = [];
  const deadline = Date.now() + 20_000;
  do {
    await worker.runRollup();
    tools = (await readApi<{ tools: ToolRow[] }>("/v1/metrics/tools", readKey)).tools;
    if (tools.reduce((sum, t) => sum + t.calls, 0) >= calls) break;
    await sleep(100);
  } while (Date.now() < deadline);
  return tools;
}

/** Nearest-rank percentile (SPEC §2.3). */
function nearestRank(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** What the worker must report, computed from the spans themselves. */
function truthOf(spans: ReadableSpan[]) {
  const calls = spans.filter((s) => s.kind === SpanKind.SERVER && s.attributes["mcp.method.name"] === "tools/call");
  const byTool = new Map<string, { outcomes: string[]; durations: number[] }>();
  for (const s of calls) {
    const errorType = s.attributes["error.type"];
    const outcome = errorType === "tool_error" ? "tool_error" : errorType === "-32602" ? "bad_args" : errorType !== undefined ? "crashed" : "ok";
    const ms = Math.round(s.duration[0] * 1000 + s.duration[1] / 1e6);
    const entry = byTool.get(String(s.attributes["gen_ai.tool.name"])) ?? { outcomes: [], durations: [] };
    entry.outcomes.push(outcome);
    entry.durations.push(ms);
    byTool.set(String(s.attributes["gen_ai.tool.name"]), entry);
  }
  return { calls: calls.length, others: spans.length - calls.length, byTool };
}

function expectFiguresMatch(tools: ToolRow[], truth: ReturnType<typeof truthOf>) {
  expect(tools.map((t) => t.tool_name).sort()).toEqual([...truth.byTool.keys()].sort());
  for (const row of tools) {
    const t = truth.byTool.get(row.tool_name)!;
    const count = (o: string) => t.outcomes.filter((x) => x === o).length;
    expect(row, row.tool_name).toMatchObject({ calls: t.outcomes.length, ok: count("ok"), bad_args: count("bad_args"), tool_error: count("tool_error"), crashed: count("crashed") });
    for (const p of [50, 95, 99] as const) {
      const exact = nearestRank(t.durations, p);
      const got = row.duration_ms[`p${p}`]!;
      expect(Math.abs(got - exact), `${row.tool_name} p${p}: ${got} vs ${exact}`).toBeLessThanOrEqual(exact < 20 ? 1 : exact * 0.05);
    }
  }
}

describe("OTLP from the OpenTelemetry JS SDK", () => {
  test("protobuf exporter, key in x-mcpulse-key, arguments not recorded", async () => {
    const project = await createProject(worker, "otlp proto");
    const before = partialSuccesses.length;
    const spans = await runScenario(new ProtoExporter({ url: `${worker.url}/v1/traces`, headers: { "x-mcpulse-key": project.ingest_key } }), false);
    const truth = truthOf(spans);
    expect(truth.calls).toBe(10);
    expect(truth.others).toBe(12); // 2 tools/list spans and 10 INTERNAL backend spans
    const tools = await toolsAfterRollup(project.read_key, truth.calls);
    expectFiguresMatch(tools, truth);
    // Not measurable without arguments: marked, never shown as 0 retries / a first-call rate.
    for (const row of tools) expect(row.not_measurable, row.tool_name).toContain("first_call_rate");
    expect(tools.reduce((sum, t) => sum + t.calls_without_args_hash, 0)).toBe(10);
    // The spans that are not tool calls came back in partial_success, and were never counted.
    const reported = partialSuccesses.slice(before).map((p) => JSON.parse(p) as { rejectedSpans: number | string; errorMessage: string });
    expect(reported.reduce((sum, p) => sum + Number(p.rejectedSpans), 0)).toBe(truth.others);
    expect(reported[0]!.errorMessage).toContain("not an MCP tools/call span");
    const { clients } = await readApi<{ clients: { client_name: string; calls: number }[] }>("/v1/metrics/clients", project.read_key);
    expect(clients.map((c) => [c.client_name, c.calls]).sort()).toEqual([["alice-client", 5], ["bob-client", 5]]);
    const sessions = await readApi<{ sessions: number; calls_per_session: number; not_measurable?: string[] }>("/v1/metrics/sessions", project.read_key);
    expect(sessions).toMatchObject({ sessions: 2, calls_per_session: 5 });
    expect(sessions.not_measurable).toEqual(["schema_tokens_per_session", "cost_per_session_usd"]);
  });

  test("JSON exporter, key as a bearer, arguments recorded: retries measured", async () => {
    const project = await createProject(worker, "otlp json");
    const before = partialSuccesses.length;
    const spans = await runScenario(new JsonExporter({ url: `${worker.url}/v1/traces`, headers: { authorization: `Bearer ${project.ingest_key}` } }), true);
    const truth = truthOf(spans);
    const tools = await toolsAfterRollup(project.read_key, truth.calls);
    expectFiguresMatch(tools, truth);
    const weather = tools.find((t) => t.tool_name === "get_weather")!;
    // Per conversation: get_weather{city: 7} bad_args, retried by {city: "Paris"}; the repeat is no retry.
    expect(weather).toMatchObject({ retries: 2, first_call_rate: 0.5, calls_without_args_hash: 0 });
    expect(weather.not_measurable).toBeUndefined();
    const reported = partialSuccesses.slice(before).map((p) => JSON.parse(p) as { rejectedSpans: number | string });
    expect(reported.reduce((sum, p) => sum + Number(p.rejectedSpans), 0)).toBe(truth.others);
    const { clients } = await readApi<{ clients: { client_name: string }[] }>("/v1/metrics/clients", project.read_key);
    expect(clients.map((c) => c.client_name).sort()).toEqual(["alice-client", "bob-client"]);
  });
});
