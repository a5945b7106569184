// Bounded dashboard pages (SPEC §3): a project with 5,000 tools and 3,000 clients gets pages of 100
// rows with a search box, whose figures are the API's; the HTML stays small whatever the project.
import { env } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { createProject, type TestProject, readSessionCookie } from "./helpers/projects.ts";
import { dayMs, getJson } from "./metrics/seed.ts";

const TOOLS = 5_000;
const CLIENTS = 3_000;
const DEAD = 2_000;
const RANGE = "from=2026-11-01&to=2026-11-07";
/** A generous bound: the unbounded page of this project was megabytes. */
const MAX_PAGE_BYTES = 400_000;

let p: TestProject;

const tool = (i: number) => `tool_${String(i).padStart(5, "0")}`;

/** Day rows through one JSON parameter per 500 rows (D1 allows 100 bound parameters). */
async function insertDays(rows: { tool: string; client: string; calls: number }[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 500) {
    await env.DB.prepare(
      "INSERT INTO tool_day_metrics (project_id, day_start_ms, tool_name, client_name, calls, ok, empty, bad_args, tool_error, crashed, response_bytes_sum, duration_ms_sum, retries, first_call_attempts, first_call_ok, duration_histogram_json) " +
        "SELECT ?1, ?2, json_extract(value, '$.tool'), json_extract(value, '$.client'), json_extract(value, '$.calls'), json_extract(value, '$.calls'), " +
        "0, 0, 0, 0, 0, 0, 0, json_extract(value, '$.calls'), json_extract(value, '$.calls'), json_object('10', json_extract(value, '$.calls')) FROM json_each(?3)",
    )
      .bind(p.project_id, dayMs("2026-11-03"), JSON.stringify(rows.slice(i, i + 500)))
      .run();
  }
}

beforeAll(async () => {
  p = await createProject("Big project");
  // Every tool called once or more (tool_00000 least), one tool by 3,000 clients, 2,000 more tools
  // registered and never called, all of them with one description (one converged group of 7,000).
  await insertDays(Array.from({ length: TOOLS }, (_, i) => ({ tool: tool(i), client: "main", calls: 1 + (i % 97) })));
  await insertDays(Array.from({ length: CLIENTS }, (_, c) => ({ tool: "shared_tool", client: `client_${String(c).padStart(4, "0")}`, calls: 1 + (c % 13) })));
  await env.DB.prepare(
    "INSERT INTO registered_tools (project_id, tool_name, schema_bytes, schema_hash, description_hash, description_norm, startup_seq) " +
      "SELECT ?1, printf('tool_%05d', value), 300 + value, 'aaaaaaaaaaaa', 'dddddddddddd', 'same words', 1 FROM json_each(?2)",
  )
    .bind(p.project_id, JSON.stringify(Array.from({ length: TOOLS + DEAD }, (_, i) => i)))
    .run();
});

async function page(path: string): Promise<{ status: number; body: string }> {
  const res = await exports.default.fetch(`http://worker${path}`, { headers: { cookie: await readSessionCookie(p.read_key) } });
  return { status: res.status, body: await res.text() };
}

function rowsOf(html: string): string[] {
  return [...html.matchAll(/<tr data-tool="([^"]*)">/g)].map((m) => m[1] ?? "");
}

function toolsTable(html: string): string {
  return /id="tools-table"[\s\S]*?<\/table>/.exec(html)?.[0] ?? "";
}

describe("dashboard pages of a project with thousands of tools and clients", () => {
  it("show the tools 100 per page in the API's order, with the API's figures and totals", async () => {
    const api = await getJson<{ tools: { tool_name: string; calls: number }[] }>(`/v1/metrics/tools?${RANGE}`, p.read_key);
    expect(api.body.tools).toHaveLength(TOOLS + DEAD + 1);
    const first = await page(`/?${RANGE}`);
    expect(first.status).toBe(200);
    expect(new TextEncoder().encode(first.body).byteLength).toBeLessThan(MAX_PAGE_BYTES);
    expect(rowsOf(toolsTable(first.body))).toEqual(api.body.tools.slice(0, 100).map((t) => t.tool_name));
    expect(first.body).toContain(`data-card="calls" data-value="${api.body.tools.reduce((n, t) => n + t.calls, 0)}"`);
    expect(first.body).toContain(`data-card="dead_tools" data-value="${DEAD}"`);
    expect(first.body).toContain(`data-tool-count="${TOOLS + DEAD + 1}"`);
    expect(first.body).toContain(`data-pages="${Math.ceil((TOOLS + DEAD + 1) / 100)}"`);
    const third = await page(`/?${RANGE}&page=3`);
    expect(rowsOf(toolsTable(third.body))).toEqual(api.body.tools.slice(200, 300).map((t) => t.tool_name));
    for (const t of api.body.tools.slice(200, 300)) {
      expect(third.body).toMatch(new RegExp(`<tr data-tool="${t.tool_name}">(?:(?!</tr>)[\\s\\S])*data-col="calls" data-value="${t.calls}"`));
    }
    const last = await page(`/?${RANGE}&page=71`);
    expect(rowsOf(toolsTable(last.body))).toEqual(api.body.tools.slice(7000).map((t) => t.tool_name));
  });

  it("find any tool or client with the search box", async () => {
    const found = await page(`/?${RANGE}&q=TOOL_00007`);
    expect(rowsOf(toolsTable(found.body))).toEqual(["tool_00007"]);
    const dead = await page(`/?${RANGE}&q=tool_06543`);
    expect(/id="dead-tools"[\s\S]*?<\/section>/.exec(dead.body)?.[0]).toContain('data-tool="tool_06543"');
    const client = await page(`/?${RANGE}&q=client_2999`);
    expect(/id="clients"[\s\S]*?<\/section>/.exec(client.body)?.[0]).toContain('data-client="client_2999"');
  });

  it("bound every other list: dead tools, clients, picker, converged descriptions", async () => {
    const { body } = await page(`/?${RANGE}`);
    expect(/id="dead-tools"[\s\S]*?<\/section>/.exec(body)?.[0]).toContain(`data-more="${DEAD - 20}"`);
    expect(/id="clients"[\s\S]*?<\/section>/.exec(body)?.[0]).toContain(`data-more="${CLIENTS + 1 - 20}"`);
    expect([...body.matchAll(/<option /g)].length).toBeLessThanOrEqual(51);
    expect(body).toContain(`and ${(TOOLS + DEAD - 10).toLocaleString("en-US")} more`);
  });

  it("page a tool's 3,000 clients, with the API's figures", async () => {
    const api = await getJson<{ clients: { client_name: string; calls: number }[] }>(`/v1/metrics/clients?${RANGE}&tool=shared_tool`, p.read_key);
    const second = await page(`/tool?name=shared_tool&${RANGE}&page=2`);
    expect(second.status).toBe(200);
    expect(new TextEncoder().encode(second.body).byteLength).toBeLessThan(MAX_PAGE_BYTES);
    const shown = [...second.body.matchAll(/<tr data-client="([^"]*)">[\s\S]*?data-value="(\d+)"/g)].map((m) => [m[1], Number(m[2])]);
    expect(shown).toEqual(api.body.clients.slice(100, 200).map((c) => [c.client_name, c.calls]));
    expect(second.body).toContain('data-pages="30"');
  });
});
