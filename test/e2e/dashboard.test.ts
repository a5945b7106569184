// The dashboard in real headless Chromium: a week of traffic goes through the real ingest and the
// real rollup cron in Miniflare, then the page's figures are checked against the read API's, a tool
// is opened, the range and the client are changed, and screenshots are taken (see SCREENSHOTS).
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { demoWorkload, type DemoWorkload } from "./dashboard/demo-data.ts";
import { MIN_CHART_LABEL_PX, WIDTHS, measureLayout } from "./dashboard/layout-checks.ts";
import { LONG_CLIENTS, LONG_PROJECT_NAME, LONG_TOOLS, MANY_TOOLS, ingestAndRollup, longNamesWorkload } from "./dashboard/long-names.ts";
import { createProject, startWorker, type RunningWorker } from "./dashboard/start-worker.ts";
import { sharedLocalAnalytics } from "../../scripts/analytics-local.ts";
import { CALLS_DATASET } from "../../src/worker/analytics/calls-dataset.ts";
import { storedPayloadRows } from "./helpers/stored-rows.ts";

// Screenshots go to the ignored test-results/ so `npm test` leaves the tree clean; `npm run
// screenshots` sets SCREENSHOTS_DIR=docs/screenshots to refresh the README's pictures on purpose.
const SCREENSHOTS = join(fileURLToPath(new URL("../../", import.meta.url)), process.env.SCREENSHOTS_DIR ?? "test-results/screenshots", "/");
const CHROMIUM_ARGS = [
  "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync",
];

type ToolRow = {
  tool_name: string; calls: number; first_call_rate: number | null; error_rate: number | null; empty_rate: number | null;
  duration_ms: { p50: number | null; p95: number | null; p99: number | null }; response_bytes: { avg: number | null };
  schema_bytes: number | null; dead: boolean; registered: boolean;
};

let worker: RunningWorker;
let browser: Browser;
let project: Awaited<ReturnType<typeof createProject>>;
let workload: DemoWorkload;

async function api<T>(path: string): Promise<T> {
  const res = await fetch(`${worker.url}${path}`, { headers: { authorization: `Bearer ${project.read_key}` } });
  if (res.status !== 200) throw new Error(`${path}: HTTP ${res.status}`);
  return (await res.json()) as T;
}

const rawRowCount = () => storedPayloadRows(worker.db, project.project_id);

/** Sends the payloads in batches, waiting for each batch's rows (written after the 202) to land, so receive order holds. */
async function ingest(payloads: Record<string, unknown>[]): Promise<void> {
  let expected = 0;
  for (let i = 0; i < payloads.length; i += 400) {
    const batch = payloads.slice(i, i + 400);
    const res = await fetch(`${worker.url}/v1/ingest`, {
      method: "POST",
      headers: { authorization: `Bearer ${project.ingest_key}`, "content-type": "application/json" },
      body: JSON.stringify({ batch }),
    });
    expect(res.status).toBe(202);
    expected += batch.length;
    const deadline = Date.now() + 20_000;
    while ((await rawRowCount()) < expected) {
      if (Date.now() > deadline) throw new Error(`ingest: only ${await rawRowCount()} of ${expected} rows landed`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** The tools table as the page shows it: data-value of each numeric cell, by tool. */
async function tableRows(page: Page): Promise<Map<string, Record<string, string>>> {
  const rows = await page.$$eval("#tools-table tbody tr", (trs) =>
    trs.map((tr) => {
      const cells: Record<string, string> = {};
      tr.querySelectorAll("td[data-col]").forEach((td: { getAttribute(name: string): string | null }) => (cells[td.getAttribute("data-col") ?? ""] = td.getAttribute("data-value") ?? ""));
      return [tr.getAttribute("data-tool") ?? "", cells] as const;
    }),
  );
  return new Map(rows);
}

function asAttr(v: number | null): string {
  return v === null ? "" : String(v);
}

async function expectTableEqualsApi(page: Page, query: string): Promise<ToolRow[]> {
  const { tools } = await api<{ tools: ToolRow[] }>(`/v1/metrics/tools?${query}`);
  const shown = await tableRows(page);
  expect([...shown.keys()].sort()).toEqual(tools.map((t) => t.tool_name).sort());
  for (const t of tools) {
    const cells = shown.get(t.tool_name);
    expect(cells, t.tool_name).toEqual({
      calls: String(t.calls), first_call_rate: asAttr(t.first_call_rate), error_rate: asAttr(t.error_rate),
      bad_args: expect.any(String), tool_error: expect.any(String), crashed: expect.any(String),
      empty_rate: asAttr(t.empty_rate), retries: expect.any(String), p50: asAttr(t.duration_ms.p50), p95: asAttr(t.duration_ms.p95),
      p99: asAttr(t.duration_ms.p99), response_avg: asAttr(t.response_bytes.avg), schema_bytes: asAttr(t.schema_bytes),
    });
  }
  const totalCalls = tools.reduce((n, t) => n + t.calls, 0);
  expect(await page.getAttribute('[data-card="calls"]', "data-value")).toBe(String(totalCalls));
  return tools;
}

beforeAll(async () => {
  // Explore reads the local stand-in for Analytics Engine (an embedded ClickHouse), as `npm run dev` does.
  const analytics = await sharedLocalAnalytics();
  worker = await startWorker({ vars: { ANALYTICS_LOCAL_URL: analytics.url } });
  project = await createProject(worker, "Orders MCP server");
  workload = demoWorkload(Date.now());
  await ingest(workload.payloads);
  // Each batch's data points reach the engine after its 202: wait until every call is there.
  const weighted = `SELECT sum(${CALLS_DATASET.doubles.calls}) AS n FROM ${analytics.engine.table} WHERE index1 = '${project.project_id}' FORMAT JSON`;
  const calls = workload.payloads.filter((p) => p.type === "call").length;
  const deadline = Date.now() + 20_000;
  while (Number((await analytics.engine.query(weighted)).data[0]?.n ?? 0) < calls) {
    if (Date.now() > deadline) throw new Error("data points did not land");
    await new Promise((r) => setTimeout(r, 20));
  }
  // The 5-minute cron, as Cloudflare runs it; a second run must change nothing (idempotent).
  await worker.runRollup();
  await worker.runRollup();
  browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: CHROMIUM_ARGS });
  mkdirSync(SCREENSHOTS, { recursive: true });
});

afterAll(async () => {
  await browser?.close();
  await worker?.stop();
});

describe("dashboard in headless Chromium", () => {
  it("signs in with ?key=, shows the API's figures, opens a tool, changes range and client", async () => {
    const context = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
    const page = await context.newPage();

    // Signed out: the sign-in form.
    await page.goto(`${worker.url}/`);
    expect(await page.isVisible('form[action="/signin"]')).toBe(true);
    await page.screenshot({ path: `${SCREENSHOTS}signin.png` });

    // ?key= once: a confirmation step naming the project (no cookie yet), the key gone from the URL;
    // its button signs in.
    await page.goto(`${worker.url}/?key=${project.read_key}`);
    expect(await page.textContent("[data-confirm-project]")).toBe("Orders MCP server");
    expect(await context.cookies()).toEqual([]);
    expect(page.url()).toBe(`${worker.url}/`);
    await page.click('form[action="/signin"] button[type="submit"]');
    await page.waitForSelector("[data-project]");
    expect(page.url()).toBe(`${worker.url}/`);
    const cookies = await context.cookies();
    const session = cookies.find((c) => c.name === "mcpulse_session");
    expect(session).toMatchObject({ httpOnly: true, sameSite: "Strict", secure: false });
    expect(decodeURIComponent(session!.value)).not.toContain(project.read_key);
    expect(await page.textContent("[data-project]")).toBe("Orders MCP server");

    // Every figure of the tools table and the cards equals the API's answer for the same range.
    const from = await page.inputValue('input[name="from"]');
    const to = await page.inputValue('input[name="to"]');
    const tools = await expectTableEqualsApi(page, `from=${from}&to=${to}`);
    // Expectations come from the range the page shows (a UTC midnight may pass during the run).
    const inRange = (iso: string) => iso.slice(0, 10) >= from && iso.slice(0, 10) <= to;
    const callsInRange = workload.payloads.filter((p) => p.type === "call" && inRange(String(p.started_at)));
    expect(callsInRange.length).toBeGreaterThan(workload.calls * 0.8);
    expect(tools.reduce((n, t) => n + t.calls, 0)).toBe(callsInRange.length);
    // Per tool, the outcome counters equal a count over the payloads that were sent.
    const sent = new Map<string, { calls: number; ok: number; empty: number; bad_args: number; tool_error: number; crashed: number }>();
    for (const payload of callsInRange) {
      const name = String(payload.tool_name);
      const counts = sent.get(name) ?? { calls: 0, ok: 0, empty: 0, bad_args: 0, tool_error: 0, crashed: 0 };
      counts.calls++;
      counts[payload.outcome as "ok" | "bad_args" | "tool_error" | "crashed"]++;
      if (payload.is_empty === true) counts.empty++;
      sent.set(name, counts);
    }
    for (const [name, counts] of sent) expect(tools.find((t) => t.tool_name === name), name).toMatchObject(counts);
    expect(tools.find((t) => t.tool_name === "export_report")).toMatchObject({ dead: true, calls: 0 });
    expect(tools.find((t) => t.tool_name === "admin_purge_customer")).toMatchObject({ dead: false, calls: 0 });
    expect(tools.find((t) => t.tool_name === "legacy_order_lookup")).toMatchObject({ registered: false, schema_bytes: null });
    const sessions = await api<{ sessions: number; cost_per_session_usd: number | null }>(`/v1/metrics/sessions?from=${from}&to=${to}`);
    // A session counts on the day it was first seen: its first call (its startup arrives later).
    const firstCall = new Map<string, string>();
    for (const p of workload.payloads) if (p.type === "call" && !firstCall.has(String(p.session_id))) firstCall.set(String(p.session_id), String(p.started_at));
    expect(sessions.sessions).toBe([...firstCall.values()].filter(inRange).length);
    expect(await page.getAttribute('[data-card="sessions"]', "data-value")).toBe(String(sessions.sessions));
    expect(await page.getAttribute('[data-card="cost_per_session_usd"]', "data-value")).toBe(asAttr(sessions.cost_per_session_usd));
    const insights = await api<{ insights: { kind: string; tool_name: string | null }[] }>(`/v1/metrics/insights?from=${from}&to=${to}`);
    // Fix first lists a tool once, at its worst insight (the API's order), its others inside it.
    const firstPerTool = insights.insights.filter((i, at) => i.tool_name === null || insights.insights.findIndex((j) => j.tool_name === i.tool_name) === at);
    const shownKinds = await page.$$eval("#insights > li[data-kind]", (lis) => lis.map((li) => `${li.getAttribute("data-kind")} ${li.getAttribute("data-tool") ?? ""}`));
    expect(shownKinds).toEqual(firstPerTool.slice(0, 8).map((i) => `${i.kind} ${i.tool_name ?? ""}`));
    const shownTools = shownKinds.map((k) => k.split(" ")[1]).filter((t) => t !== "");
    expect(new Set(shownTools).size).toBe(shownTools.length);
    expect(await page.isVisible("#dead-tools >> text=export_report")).toBe(true);
    expect(await page.isVisible("[data-convergence]")).toBe(true);
    expect(await page.isVisible('[data-churn="get_order"]')).toBe(true);
    expect(await page.isVisible('[data-silent="customer_email"]')).toBe(true);
    await page.screenshot({ path: `${SCREENSHOTS}overview.png`, fullPage: true });

    // Sorting by calls: descending, then ascending.
    await page.click('#tools-table th:has-text("Calls")');
    const desc = await page.$$eval('#tools-table tbody td[data-col="calls"]', (tds) => tds.map((td) => Number(td.getAttribute("data-value"))));
    expect(desc).toEqual([...desc].sort((a, b) => b - a));
    await page.click('#tools-table th:has-text("Calls")');
    const asc = await page.$$eval('#tools-table tbody td[data-col="calls"]', (tds) => tds.map((td) => Number(td.getAttribute("data-value"))));
    expect(asc).toEqual([...asc].sort((a, b) => a - b));

    // A tool page: the same figures as the API with the tool filter.
    await page.click('#tools-table tr[data-tool="search_orders"] a');
    await page.waitForURL((u) => u.pathname === "/tool" && u.searchParams.get("name") === "search_orders");
    const [one] = (await api<{ tools: ToolRow[] }>(`/v1/metrics/tools?from=${from}&to=${to}&tool=search_orders`)).tools;
    expect(one).toBeDefined();
    for (const [card, value] of [["calls", one!.calls], ["first_call_rate", one!.first_call_rate], ["p50", one!.duration_ms.p50], ["p95", one!.duration_ms.p95], ["p99", one!.duration_ms.p99], ["empty_rate", one!.empty_rate]] as const) {
      expect(await page.getAttribute(`[data-card="${card}"]`, "data-value"), card).toBe(asAttr(value));
    }
    expect(await page.isVisible('svg[data-chart="latency"]')).toBe(true);
    expect(await page.isVisible('svg[data-chart="rates"]')).toBe(true);
    expect(await page.isVisible("#schema-regression >> text=→")).toBe(true);
    await page.screenshot({ path: `${SCREENSHOTS}tool.png`, fullPage: true });

    // Back to the overview; change the range with the date inputs.
    await page.click("header.top a.brand");
    const newFrom = new Date(Date.now() - 2 * 86_400_000).toISOString().slice(0, 10);
    await page.fill('input[name="from"]', newFrom);
    await page.click('#range-picker button[type="submit"]');
    await page.waitForURL((u) => u.searchParams.get("from") === newFrom);
    await expectTableEqualsApi(page, `from=${newFrom}&to=${to}`);

    // Change the client: the select submits the form by itself.
    await page.selectOption('select[name="client"]', "cursor");
    await page.waitForURL((u) => u.searchParams.get("client") === "cursor");
    expect(new URL(page.url()).searchParams.get("from")).toBe(newFrom);
    await expectTableEqualsApi(page, `from=${newFrom}&to=${to}&client=cursor`);
    const cursorSessions = await api<{ sessions: number }>(`/v1/metrics/sessions?from=${newFrom}&to=${to}&client=cursor`);
    expect(await page.getAttribute('[data-card="sessions"]', "data-value")).toBe(String(cursorSessions.sessions));

    // Quick range: 30 days, client kept.
    await page.click('a[data-quick="30"]');
    await page.waitForURL((u) => u.searchParams.get("client") === "cursor" && u.searchParams.get("from") !== newFrom);
    const u = new URL(page.url());
    await expectTableEqualsApi(page, `from=${u.searchParams.get("from")}&to=${u.searchParams.get("to")}&client=cursor`);
    await context.close();
  });

  it("opens Explore from a tool row: its chart and table, figures equal to /v1/explore's, no CSP violation", async () => {
    const context = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
    const page = await context.newPage();
    const refused: string[] = [];
    page.on("console", (m) => {
      if (m.type() === "error") refused.push(m.text());
    });
    page.on("pageerror", (e) => refused.push(String(e)));
    await page.goto(`${worker.url}/?key=${project.read_key}`);
    await page.click('form[action="/signin"] button[type="submit"]');
    await page.waitForSelector("[data-project]");
    await page.click('tr[data-tool="search_orders"] a[data-explore-link]');
    await page.waitForSelector("#explore-table");
    expect(new URL(page.url()).pathname).toBe("/explore");
    expect(await page.isVisible('[data-chart="measure"]')).toBe(true);
    const search = new URL(page.url()).search;
    const answer = await api<{ rows: { client_version: string; calls: number }[] }>(`/v1/explore${search}`);
    expect(answer.rows.length).toBeGreaterThan(0);
    const cells = await page.$$eval("#explore-table tbody tr", (trs) => trs.map((tr) => [...tr.querySelectorAll("td")].slice(0, 2).map((td) => td.textContent?.trim() ?? "")));
    expect(cells).toEqual(answer.rows.map((r) => [r.client_version, r.calls.toLocaleString("en-US")]));
    // Change the question in the form: per day, the chart over time.
    await page.selectOption('select[name="grain"]', "day");
    await page.click('#explore-form button[type="submit"]');
    await page.waitForSelector("#explore-table");
    expect(new URL(page.url()).searchParams.get("grain")).toBe("day");
    expect(await page.isVisible('[data-chart="measure"]')).toBe(true);
    await page.screenshot({ path: `${SCREENSHOTS}explore.png`, fullPage: true });
    expect(refused.filter((t) => /Content Security Policy|Refused to/i.test(t))).toEqual([]);
    expect(refused).toEqual([]);
    await context.close();
  });

  it("fits every page to a phone and a laptop, with the longest names the wire allows and thousands of tools", async () => {
    const wide = await createProject(worker, LONG_PROJECT_NAME);
    await ingestAndRollup(worker, wide, longNamesWorkload(Date.now()));
    // A rule over each tool and a destination with long names, so the alerts page has rows; its
    // deliveries fail as invalid targets without leaving the machine.
    const adminPost = async (path: string, body: unknown) => {
      const res = await fetch(`${worker.url}/v1/admin/projects/${wide.project_id}/${path}`, {
        method: "POST", headers: { authorization: `Bearer ${worker.adminToken}`, "content-type": "application/json" }, body: JSON.stringify(body),
      });
      expect(res.status).toBe(201);
      return (await res.json()) as { id: string };
    };
    const slack = await adminPost("alert-destinations", { kind: "slack", url: "https://hooks.slack.com/services/T0/B0/abcdefgh", name: "billing-oncall-eu-west-production-".repeat(3) });
    await adminPost("alert-rules", { name: "Error rate of any tool over ten percent across the production fleet", metric: "error_rate", op: ">", threshold: 0.1, tool: "*", min_calls: 5, for_evaluations: 1, destinations: [slack.id] });
    await worker.db.prepare("UPDATE alert_destinations SET url = 'http://unreachable.invalid/' WHERE project_id = ?1").bind(wide.project_id).run();
    await worker.runRollup();

    const pages: [string, string, { chart?: boolean }][] = [
      ["overview", "/", { chart: true }],
      ["overview, page 2 of the tools", "/?page=2", {}],
      ["tool page, longest name", `/tool?name=${encodeURIComponent(LONG_TOOLS[0]!)}`, { chart: true }],
      ["tool page, right-to-left name", `/tool?name=${encodeURIComponent(LONG_TOOLS[3]!)}&client=${encodeURIComponent(LONG_CLIENTS[0]!)}`, { chart: true }],
      ["overview of one long-named client", `/?client=${encodeURIComponent(LONG_CLIENTS[1]!)}`, { chart: true }],
      ["alerts", "/alerts", {}],
    ];
    for (const width of WIDTHS) {
      const context = await browser.newContext({ viewport: { width, height: 900 } });
      const page = await context.newPage();
      await page.goto(`${worker.url}/`);
      expect(await measureLayout(page), `sign-in at ${width}`).toMatchObject({ scrollWidth: width, overflowing: [] });
      await page.goto(`${worker.url}/?key=${wide.read_key}`);
      expect(await measureLayout(page), `confirmation at ${width}`).toMatchObject({ scrollWidth: width, overflowing: [] });
      await page.click('form[action="/signin"] button[type="submit"]');
      await page.waitForSelector("[data-project]");
      for (const [name, path, opts] of pages) {
        await page.goto(`${worker.url}${path}`);
        const layout = await measureLayout(page);
        const what = `${name} at ${width} px`;
        // No sideways scroll of the page: wide tables scroll inside their card.
        expect(layout.scrollWidth, what).toBeLessThanOrEqual(layout.innerWidth);
        expect(layout.overflowing, what).toEqual([]);
        // The header is one bar with "Sign out" in it.
        expect(layout.header?.signOutInside, what).toBe(true);
        expect(layout.header!.height, what).toBeLessThanOrEqual(64);
        if (opts.chart) expect(layout.minChartLabelPx, what).toBeGreaterThanOrEqual(MIN_CHART_LABEL_PX);
        // Percentile labels never overprint one another.
        const boxes = await page.$$eval('svg[data-chart="latency"] [data-percentile] text', (els) =>
          els.map((el) => el.getBoundingClientRect()).filter((r) => r.width > 0).map((r) => [r.left, r.top, r.right, r.bottom] as const),
        );
        for (const [i, a] of boxes.entries()) {
          for (const b of boxes.slice(i + 1)) expect(a[2] <= b[0] || b[2] <= a[0] || a[3] <= b[1] || b[3] <= a[1], `${what}: percentile labels overlap`).toBe(true);
        }
        // Long names are cut, with the whole name on hover.
        const cut = await page.$$eval("bdi.name", (els) => els.filter((el) => el.scrollWidth > el.clientWidth + 1).map((el) => el.getAttribute("title") ?? ""));
        if (path === "/") expect(cut, what).toContain(LONG_TOOLS[0]);
      }
      // Thousands of tools: one bounded page of them.
      await page.goto(`${worker.url}/`);
      expect(await page.getAttribute("[data-tool-count]", "data-tool-count")).toBe(String(MANY_TOOLS));
      expect(await page.locator("#tools-table tbody tr").count()).toBe(100);
      await context.close();
    }
  });

  it("takes phone screenshots beside the desktop ones, and fits the demo's pages to a phone", async () => {
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2 });
    const page = await context.newPage();
    await page.goto(`${worker.url}/`);
    await page.screenshot({ path: `${SCREENSHOTS}signin-phone.png` });
    await page.goto(`${worker.url}/?key=${project.read_key}`);
    await page.click('form[action="/signin"] button[type="submit"]');
    await page.waitForSelector("[data-project]");
    for (const [name, path] of [["overview", "/"], ["tool", "/tool?name=search_orders"], ["alerts", "/alerts"]] as const) {
      await page.goto(`${worker.url}${path}`);
      const layout = await measureLayout(page);
      expect(layout.scrollWidth, name).toBeLessThanOrEqual(390);
      expect(layout.header?.signOutInside, name).toBe(true);
      expect(layout.header!.height, name).toBeLessThanOrEqual(64);
      if (name === "overview") {
        // The tools and clients tables are cut by the phone: each says it scrolls, and its right
        // edge fades until it is scrolled to the end.
        for (const table of ["#tools", "#clients"]) {
          expect(await page.isVisible(`${table} [data-scroll-hint]`), table).toBe(true);
          expect(await page.getAttribute(`${table} .scroll`, "data-cut"), table).toBe("");
          await page.$eval(`${table} .scroll`, (box) => box.scrollTo({ left: box.scrollWidth }));
          await expect.poll(() => page.getAttribute(`${table} .scroll`, "data-cut")).toBeNull();
          // Back to the first columns, as a reader arrives (and as the screenshot shows it).
          await page.$eval(`${table} .scroll`, (box) => box.scrollTo({ left: 0 }));
          await expect.poll(() => page.getAttribute(`${table} .scroll`, "data-cut")).toBe("");
        }
        // A table that fits shows no hint.
        expect(await page.isVisible("#pairs [data-scroll-hint]")).toBe(false);
      }
      if (name === "tool") {
        // The explanation of first-call success, opened.
        await page.click('[data-card="first_call_rate"] summary');
        expect(await page.isVisible('[data-card="first_call_rate"] [data-why="chains"]')).toBe(true);
        expect(await measureLayout(page)).toMatchObject({ scrollWidth: 390, overflowing: [] });
      }
      await page.screenshot({ path: `${SCREENSHOTS}${name}-phone.png`, fullPage: true });
    }
    await context.close();
  });

  it("never shows the data of another project's key", async () => {
    const other = await createProject(worker, "Someone else");
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${worker.url}/?key=${other.read_key}`);
    await page.click('form[action="/signin"] button[type="submit"]');
    await page.waitForSelector("[data-project]");
    expect(await page.textContent("[data-project]")).toBe("Someone else");
    expect(await page.content()).not.toContain("search_orders");
    await page.goto(`${worker.url}/tool?name=search_orders`);
    expect(await page.getAttribute('[data-card="calls"]', "data-value")).toBe("0");
    await context.close();
  });
});
