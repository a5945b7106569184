// The read side of OTLP calls (SPEC §10): calls without an args_hash are counted everywhere
// (calls_without_args_hash), and the figures they cannot give — retries and first-call success, and
// schema cost for sessions without a tool list — are marked not_measurable in the API, shown as
// "not measurable" on the dashboard, never as 0 or 100 %. SDK calls keep every figure.
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { callPayload, postIngest, startupPayload } from "./helpers/ingest.ts";
import { runCron } from "./helpers/cron.ts";
import { exportRequest, postTraces, protobufOf, toolSpan } from "./helpers/otlp.ts";
import { pageHtml } from "./helpers/pages.ts";
import { createProject } from "./helpers/projects.ts";

const today = () => new Date().toISOString().slice(0, 10);
const weekAgo = () => new Date(Date.now() - 6 * 86_400_000).toISOString().slice(0, 10);

async function getJson<T>(path: string, key: string): Promise<T> {
  const res = await exports.default.fetch(`http://worker${path}`, { headers: { authorization: `Bearer ${key}` } });
  expect(res.status, path).toBe(200);
  return res.json<T>();
}

/** The text of a dashboard card's value (before its delta). */
function cardValue(html: string, card: string): string | undefined {
  return new RegExp(`data-card="${card}"[^>]*>\\s*<div class="label">[^<]*</div>\\s*<div class="value">([^<]*)`).exec(html)?.[1]?.trim();
}

type Row = { tool_name: string; calls: number; retries: number; first_call_rate: number | null; calls_without_args_hash: number; not_measurable?: string[] };

describe("OTLP calls on the read side", () => {
  it("without arguments: counted, and retries and first-call success are not measurable (API, sessions, dashboard)", async () => {
    const p = await createProject();
    const spans = [0, 1, 2].map((i) => toolSpan("otel_tool", { startMs: Date.now() - 120_000 + i * 1_000, durationMs: 10, attrs: { "mcp.session.id": "conv-1" } }));
    expect((await postTraces(protobufOf(exportRequest(spans)), { key: p.ingest_key })).status).toBe(200);
    await runCron(Date.now());
    const range = `from=${weekAgo()}&to=${today()}`;
    const { tools } = await getJson<{ tools: Row[] }>(`/v1/metrics/tools?${range}`, p.read_key);
    expect(tools).toHaveLength(1);
    expect(tools[0]).toMatchObject({ tool_name: "otel_tool", calls: 3, calls_without_args_hash: 3, retries: 0 });
    expect(tools[0]!.not_measurable).toEqual(["retries", "first_call_attempts", "first_call_ok", "first_call_rate"]);
    const { clients } = await getJson<{ clients: Row[] }>(`/v1/metrics/clients?${range}`, p.read_key);
    expect(clients[0]!.not_measurable).toContain("first_call_rate");
    const sessions = await getJson<{ sessions: number; not_measurable?: string[] }>(`/v1/metrics/sessions?${range}`, p.read_key);
    expect(sessions.sessions).toBe(1);
    expect(sessions.not_measurable).toEqual(["schema_tokens_per_session", "cost_per_session_usd"]);
    const html = await pageHtml(`/?${range}`, p.read_key);
    expect(cardValue(html, "first_call_rate")).toBe("not measurable");
    expect(cardValue(html, "cost_per_session_usd")).toBe("not measurable");
    expect(cardValue(html, "error_rate")).toBe("0.0%");
    // The card says why instead of explaining chains that describe nothing; so does the tool's page.
    expect(html).toContain("OpenTelemetry spans without their arguments");
    const toolPage = await pageHtml(`/tool?${range}&name=otel_tool`, p.read_key);
    expect(cardValue(toolPage, "first_call_rate")).toBe("not measurable");
    expect(toolPage).toContain("retries not measurable");
    expect(toolPage).not.toContain("data-why-retries");
  });

  it("with arguments (gen_ai.tool.call.arguments): retries are measured like SDK calls", async () => {
    const p = await createProject();
    const start = Date.now() - 120_000;
    const spans = [
      toolSpan("search", { startMs: start, durationMs: 10, attrs: { "mcp.session.id": "conv-2", "gen_ai.tool.call.arguments": '{"q":"acme"}', "error.type": "-32602" } }),
      toolSpan("search", { startMs: start + 1_000, durationMs: 10, attrs: { "mcp.session.id": "conv-2", "gen_ai.tool.call.arguments": '{"q":"acme inc"}' } }),
    ];
    expect((await postTraces(protobufOf(exportRequest(spans)), { key: p.ingest_key })).status).toBe(200);
    await runCron(Date.now());
    const { tools } = await getJson<{ tools: Row[] }>(`/v1/metrics/tools?from=${weekAgo()}&to=${today()}`, p.read_key);
    expect(tools[0]).toMatchObject({ calls: 2, retries: 1, first_call_rate: 0, calls_without_args_hash: 0 });
    expect(tools[0]!.not_measurable).toBeUndefined();
  });

  it("SDK calls and startups keep every figure measurable", async () => {
    const p = await createProject();
    expect((await postIngest({ batch: [startupPayload(), callPayload(), callPayload({ started_at: new Date(Date.now() - 30_000).toISOString() })] }, { key: p.ingest_key })).status).toBe(202);
    await runCron(Date.now());
    const range = `from=${weekAgo()}&to=${today()}`;
    const { tools } = await getJson<{ tools: Row[] }>(`/v1/metrics/tools?${range}`, p.read_key);
    const called = tools.find((t) => t.tool_name === "search_orders")!;
    expect(called).toMatchObject({ calls: 2, calls_without_args_hash: 0 });
    expect(called.not_measurable).toBeUndefined();
    const sessions = await getJson<{ not_measurable?: string[] }>(`/v1/metrics/sessions?${range}`, p.read_key);
    expect(sessions.not_measurable).toBeUndefined();
    const html = await pageHtml(`/?${range}`, p.read_key);
    expect(html).not.toContain("not measurable");
    expect(cardValue(html, "first_call_rate")).toMatch(/%$/);
    // The tool page keeps its explanation of retries for SDK calls (what the OTLP test above checks is gone).
    expect(await pageHtml(`/tool?${range}&name=search_orders`, p.read_key)).toContain("data-why-retries");
  });
});
