// The Explore page (GET /explore, SPEC §8): the form, the answer's table and chart from the same
// answering path as GET /v1/explore (the local Analytics Engine the test config starts), ≈ on every
// estimate, the (other) row, producers' names escaped, 400 and 503 pages in words, and the links
// into it from tool and client rows.
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import worker from "../../src/worker/index.ts";
import { callDataPoints } from "../../src/worker/analytics/calls-dataset.ts";
import { EXPLORE_PARAMETERS } from "../../src/worker/analytics/explore-query.ts";
import { callPayload, postIngest } from "./helpers/ingest.ts";
import { createProject, readSessionCookie } from "./helpers/projects.ts";
import { dayMs, seedHour } from "./metrics/seed.ts";

const HOUR = 3_600_000;
const STARTED_AT_MS = Math.floor(Date.now() / HOUR) * HOUR - HOUR + 1000;
const HOSTILE = '<img src=x onerror="alert(1)">\u202Egnp.exe';

async function page(path: string, key?: string): Promise<{ status: number; html: string }> {
  const headers: Record<string, string> = key ? { cookie: await readSessionCookie(key) } : {};
  const res = await exports.default.fetch(`http://worker${path}`, { headers, redirect: "manual" });
  return { status: res.status, html: await res.text() };
}

async function ingest(key: string, count: number, tool = (i: number) => `tool_${i % 3}`) {
  const batch = Array.from({ length: count }, (_, i) =>
    callPayload({ tool_name: tool(i), outcome: i % 4 === 0 ? "bad_args" : "ok", duration_ms: 100 + i, started_at: new Date(STARTED_AT_MS).toISOString(), client_version: `1.${i % 2}` }),
  );
  expect((await postIngest({ batch }, { key })).status).toBe(202);
}

/** The cells of the answer's table, row by row (tags stripped). */
function tableRows(html: string): string[][] {
  const table = html.slice(html.indexOf('id="explore-table"'));
  const body = table.slice(table.indexOf("<tbody>"), table.indexOf("</tbody>"));
  return [...body.matchAll(/<tr[^>]*>(.*?)<\/tr>/gs)].map((m) => [...m[1]!.matchAll(/<td[^>]*>(.*?)<\/td>/gs)].map((c) => c[1]!.replace(/<[^>]+>/g, "").trim()));
}

describe("the Explore page", () => {
  it("needs a signed-in read session", async () => {
    const { status, html } = await page("/explore");
    expect(status).toBe(401);
    expect(html).toContain('action="/signin"');
  });

  it("answers the form's question with a table equal to /v1/explore's and a bar chart, distinct counts marked ≈", async () => {
    const p = await createProject("Explore project");
    await ingest(p.ingest_key, 30);
    const query = "measure=calls&measure=bad_args&measure=distinct_args&by=tool&by=&grain=none&filter[client]=&limit=";
    const { status, html } = await page(`/explore?${query}`, p.read_key);
    expect(status).toBe(200);
    expect(html).toContain('href="/explore"'); // the navigation
    expect(html).toContain('data-chart="measure"');
    // The form keeps the question: measures checked, the breakdown selected.
    expect(html).toMatch(/<input type="checkbox" name="measure" value="distinct_args" checked/);
    expect(html).not.toMatch(/<input type="checkbox" name="measure" value="p95" checked/);
    expect(html).toMatch(/<option value="tool" selected/);
    const api = await exports.default.fetch("http://worker/v1/explore?measure=calls,bad_args,distinct_args&by=tool", { headers: { authorization: `Bearer ${p.read_key}` } });
    const answer = await api.json<{ rows: { tool: string; calls: number; bad_args: number; distinct_args: number }[] }>();
    expect(answer.rows.length).toBe(3);
    expect(tableRows(html)).toEqual(answer.rows.map((r) => [r.tool, String(r.calls), String(r.bad_args), `≈ ${r.distinct_args}`]));
    expect(html).toContain("Distinct args is approximate (≈)");
    expect(html).not.toContain("sampled these calls");
  });

  it("sums the groups past the limit into (other), and charts time with a grain", async () => {
    const p = await createProject();
    await ingest(p.ingest_key, 30);
    const other = await page("/explore?measure=calls&by=tool&limit=1", p.read_key);
    const rows = tableRows(other.html);
    expect(rows).toEqual([["tool_0", "10"], ["(other)", "20"]]);
    expect(other.html).toContain('data-other="1"');

    const perDay = await page("/explore?measure=calls&grain=day", p.read_key);
    expect(perDay.status).toBe(200);
    const day = new Date(STARTED_AT_MS).toISOString().slice(0, 10);
    expect(tableRows(perDay.html)).toEqual([[day, "30"]]);
    expect(perDay.html).toContain("Calls per day");
    expect(perDay.html).toMatch(/<rect [^>]*><title>[^<]*: 30<\/title>/);
  });

  it("marks every figure ≈ when Analytics Engine sampled the points", async () => {
    const p = await createProject();
    // Two points kept of about twenty calls: AE's _sample_interval 10 on each.
    const calls = [0, 1].map((i) => ({ tool_name: "sampled_tool", client_name: "c", session_id: "", outcome: "ok" as const, is_empty: false, duration_ms: 10 + i, response_bytes: 5, args_hash: "52a4fe5fc814", started_at_ms: STARTED_AT_MS }));
    const res = await fetch(new URL("/write", env.ANALYTICS_LOCAL_URL), { method: "POST", body: JSON.stringify({ points: callDataPoints(p.project_id, calls), sample_interval: 10 }) });
    expect(res.status).toBe(200);
    const { status, html } = await page("/explore?measure=calls&measure=error_rate&by=tool", p.read_key);
    expect(status).toBe(200);
    expect(tableRows(html)).toEqual([["sampled_tool", "≈ 20", "≈ 0.0%"]]);
    expect(html).toContain("up to 1 in 10");
    expect(html).toContain("≈ Calls</th>");
  });

  it("shows producers' names as text in <bdi>, never as markup", async () => {
    const p = await createProject();
    await ingest(p.ingest_key, 4, () => HOSTILE);
    const { status, html } = await page(`/explore?by=tool&filter[tool]=${encodeURIComponent(HOSTILE)}`, p.read_key);
    expect(status).toBe(200);
    expect(html).not.toContain("<img");
    expect(html).toContain("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;");
    expect(html).toMatch(/<bdi class="name" title="[^"]*">&lt;img src=x onerror=&quot;alert\(1\)&quot;&gt;<span class="cc">/);
    // The filter's value is back in its input, escaped.
    expect(html).toContain('name="filter[tool]" value="&lt;img src=x onerror=&quot;alert(1)&quot;&gt;');
    expect(tableRows(html)[0]![1]).toBe("4");
  });

  it.each([
    ["an unknown measure", "measure=calls%27)%20--", "'measure' must be among: calls, errors, error_rate"],
    ["an unknown parameter", "project_id=prj_other", `unknown parameter (allowed: ${EXPLORE_PARAMETERS.join(", ")})`],
    ["three breakdowns", "by=tool&by=client&by=colo", "'by' names at most 2 dimensions"],
    ["a limit just over 200", "limit=201", "'limit' must be a whole number from 1 to 200"],
    ["a date that does not exist", "from=2026-02-30", "'from' and 'to' must be dates"],
    ["a measure the day rows lack, past 90 days", "measure=distinct_args&from=2020-01-01&to=2020-01-31", "before the last 90 days Explore answers from the day rows, which hold no distinct_args"],
  ])("answers %s with a 400 page that says what is allowed", async (_, query, message) => {
    const p = await createProject();
    const { status, html } = await page(`/explore?${query}`, p.read_key);
    expect(status).toBe(400);
    expect(html).toContain('data-error="bad-request"');
    expect(html).toContain(message.replaceAll("'", "&#39;"));
    expect(html).toContain('id="explore-form"'); // the form stays, to correct the question
    expect(html).not.toContain("prj_other");
    expect(html).not.toMatch(/\bat .*\.(ts|js):\d+/);
  });

  it("answers limits at the edge: 200 groups and two breakdowns", async () => {
    const p = await createProject();
    await ingest(p.ingest_key, 6);
    expect((await page("/explore?by=tool&by=client_version&limit=200", p.read_key)).status).toBe(200);
    const two = await page("/explore?by=tool,client_version&limit=199", p.read_key);
    expect(tableRows(two.html).length).toBe(6);
  });

  it("answers 503 with how to configure Analytics Engine when it cannot be read", async () => {
    const p = await createProject();
    const ctx = createExecutionContext();
    const bindings = { ...env, ANALYTICS_LOCAL_URL: undefined } as unknown as typeof env;
    const res = await worker.fetch(new Request("http://worker/explore?measure=calls", { headers: { cookie: await readSessionCookie(p.read_key) } }) as never, bindings, ctx);
    await waitOnExecutionContext(ctx);
    expect(res.status).toBe(503);
    const html = await res.text();
    expect(html).toContain('data-error="unavailable"');
    expect(html).toContain("CF_ANALYTICS_TOKEN");
    expect(html).toContain("docs/explore.md");
    expect(html).not.toMatch(/\bat .*\.(ts|js):\d+/);
  });
});

describe("links into Explore", () => {
  it("puts a pre-filtered Explore link on every tool row and client row, and the link answers", async () => {
    const p = await createProject();
    const h = dayMs("2026-11-02") + 9 * HOUR;
    await seedHour({ projectId: p.project_id, hourMs: h, tool: "search_orders", client: "cursor", counters: { calls: 5, ok: 5, first_call_attempts: 5, first_call_ok: 5 } });
    const overview = await page("/?from=2026-11-01&to=2026-11-03", p.read_key);
    expect(overview.status).toBe(200);
    const toolLink = "/explore?filter%5Btool%5D=search_orders&amp;by=client_version&amp;measure=calls&amp;measure=error_rate&amp;measure=p95&amp;from=2026-11-01&amp;to=2026-11-03";
    expect(overview.html).toContain(`href="${toolLink}"`);
    expect(overview.html).toContain('href="/explore?filter%5Bclient%5D=cursor&amp;by=client_version');
    const tool = await page("/tool?name=search_orders&from=2026-11-01&to=2026-11-03", p.read_key);
    expect(tool.html).toContain('href="/explore?filter%5Btool%5D=search_orders&amp;filter%5Bclient%5D=cursor&amp;by=client_version');
    const followed = await page(toolLink.replaceAll("&amp;", "&"), p.read_key);
    expect(followed.status).toBe(200);
    expect(followed.html).toContain('name="filter[tool]" value="search_orders"');
    expect(followed.html).toMatch(/<option value="client_version" selected/);
  });
});
