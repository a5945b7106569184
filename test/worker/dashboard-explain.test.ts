// Figures that explain themselves: the first-call success and retry counts open to what they are
// made of (SPEC §2.2), a 0 % first-call success on all-ok calls says why, and "Fix first" states its
// small-sample rule and lists the failing tool first.
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { groupInsightsByTool } from "../../src/worker/dashboard/components.tsx";
import { firstCallFacts, knownSessionShare } from "../../src/worker/dashboard/explain.tsx";
import { counterFigures, emptyGroup } from "../../src/worker/metrics/counters.ts";
import { INSIGHT_MIN_CALLS, INSIGHT_MIN_FAILURES, SMALL_SAMPLE_RULE, type Insight } from "../../src/worker/metrics/insights.ts";
import { pageHtml } from "./helpers/pages.ts";
import { createProject } from "./helpers/projects.ts";
import { dayMs, seedHour } from "./metrics/seed.ts";

const page = pageHtml;

function figures(counters: Record<string, number>) {
  const group = emptyGroup();
  Object.assign(group.counters, counters);
  return counterFigures(group);
}

/** The text of one element of `html` opened at `marker` (tags dropped, spaces folded). */
function textAt(html: string, marker: string, close: string): string {
  const start = html.indexOf(marker);
  expect(start, marker).toBeGreaterThanOrEqual(0);
  return html.slice(start, html.indexOf(close, start)).replace(/<[^>]+>/g, "").replace(/\s+/g, " ");
}

describe("first-call facts", () => {
  it("bound the reasons a chain failed, exactly where the counters pin them down", () => {
    // 6 calls, all ok with data, 2 chains each retried twice: every failed chain was retried.
    const allOk = firstCallFacts(figures({ calls: 6, ok: 6, retries: 4, first_call_attempts: 2, first_call_ok: 0 }));
    expect(allOk).toMatchObject({ chains: 2, firstCallOk: 0, failedChains: 2, retries: 4, retriedAtMost: 2, retriedOkAtLeast: 2, onlyRetried: true });
    // One empty call is enough to leave the reason open.
    expect(firstCallFacts(figures({ calls: 6, ok: 6, empty: 1, retries: 4, first_call_attempts: 2, first_call_ok: 0 })).onlyRetried).toBe(false);
    // 7 failed chains, 2 failed calls and 1 empty one in all: at least 4 were ok with data and retried.
    const mixed = firstCallFacts(figures({ calls: 20, ok: 18, empty: 1, bad_args: 2, retries: 5, first_call_attempts: 15, first_call_ok: 8 }));
    expect(mixed).toMatchObject({ failedChains: 7, failedCalls: 2, emptyCalls: 1, retriedOkAtLeast: 4, retriedAtMost: 5, onlyRetried: false });
    expect(firstCallFacts(figures({ calls: 3, ok: 3, first_call_attempts: 3, first_call_ok: 3 }))).toMatchObject({ failedChains: 0, onlyRetried: false });
  });

  it("give the share of calls with a known session, from the figures' own calls_without_session (SPEC §2.4)", () => {
    const f = figures({ calls: 200, ok: 200, first_call_attempts: 200, first_call_ok: 200, calls_without_session: 50 });
    expect(firstCallFacts(f).knownSessionShare).toBe(0.75);
    expect(knownSessionShare(figures({ calls: 8, calls_without_session: 0 }))).toBe(1);
    expect(knownSessionShare(figures({ calls: 8, calls_without_session: 8 }))).toBe(0);
    expect(knownSessionShare(figures({}))).toBeNull();
    expect(firstCallFacts(figures({})).knownSessionShare).toBeNull();
  });
});

describe("the pages explain their figures", () => {
  it("show per client the share of calls with a known session (SPEC §2.4)", async () => {
    const p = await createProject("known sessions");
    const hourMs = dayMs("2026-11-04") + 9 * 3_600_000;
    await seedHour({ projectId: p.project_id, hourMs, tool: "search", client: "chatgpt", counters: { calls: 8, ok: 8, first_call_attempts: 8, first_call_ok: 8, calls_without_session: 2 } });
    await seedHour({ projectId: p.project_id, hourMs, tool: "search", client: "stateless-bot", counters: { calls: 4, ok: 4, first_call_attempts: 4, first_call_ok: 4, calls_without_session: 4 } });
    const html = await page("/?from=2026-11-04&to=2026-11-04", p.read_key);
    const cell = (client: string) => {
      const row = html.slice(html.indexOf(`data-client="${client}"`));
      return row.slice(row.indexOf("data-known-session"), row.indexOf("</td>", row.indexOf("data-known-session")));
    };
    expect(cell("chatgpt")).toContain('data-value="0.75"');
    expect(cell("stateless-bot")).toContain('data-value="0"');
    // The first-call card says which share of the calls had a known session: 6 of 12.
    expect(textAt(html, "data-why-first-call", "</details>")).toContain("50");
  });


  it("open a tool's first-call success and retries to their chains, and say why all-ok calls score 0 %", async () => {
    const p = await createProject("explained");
    const hourMs = dayMs("2026-11-03") + 10 * 3_600_000;
    await seedHour({ projectId: p.project_id, hourMs, tool: "refine_search", client: "c", counters: { calls: 6, ok: 6, retries: 4, first_call_attempts: 2, first_call_ok: 0 } });
    await seedHour({ projectId: p.project_id, hourMs, tool: "plain", client: "c", counters: { calls: 20, ok: 18, empty: 1, bad_args: 2, retries: 5, first_call_attempts: 15, first_call_ok: 8 } });
    const range = "from=2026-11-03&to=2026-11-03";

    const tool = await page(`/tool?name=refine_search&${range}`, p.read_key);
    const why = textAt(tool, "data-why-first-call", "</details>");
    expect(why).toContain("0 of 2 first calls · why?");
    expect(why).toContain("2 chains — a chain is a call that is not a retry");
    expect(why).toContain("Every call was ok with data, so all 2 failed because their first call was retried");
    expect(why).toContain("4 calls were retries:");
    expect(why).toContain("DIFFERENT arguments");
    expect(why).toContain("A repeat with the same arguments (pagination, polling) is never a retry");
    expect(textAt(tool, "data-why-retries", "</details>")).toContain("They belong to at most 2 of the 2 chains");
    // A <details> opens without a script: the page's CSP allows none inline.
    expect(tool).not.toMatch(/<details[^>]*\son\w+=/);

    const other = await page(`/tool?name=plain&${range}`, p.read_key);
    const otherWhy = textAt(other, "data-why-first-call", "</details>");
    expect(otherWhy).toContain("7 did not: their first call failed (2 calls failed in all), came back empty (1 empty call in all), or was retried (at most 5)");
    expect(otherWhy).toContain("At least 4 of them were ok with data at the first call");
    expect(otherWhy).not.toContain("Every call was ok");

    // The overview's tools table marks the 0 % cell with the reason, the other not.
    const overview = await page(`/?${range}`, p.read_key);
    const row = (name: string) => overview.split("<tr").find((r) => r.startsWith(` data-tool="${name}"`))!;
    expect(row("refine_search")).toMatch(/data-col="first_call_rate" data-value="0" title="every call was ok with data: the failed first calls were retried/);
    expect(row("plain")).not.toContain("data-why");
    expect(textAt(overview, "data-why-first-call", "</details>")).toContain("8 of 17 first calls · why?");
  });

  it("lists the failing tool first in Fix first, once, with its other reasons inside; and states the small-sample rule", async () => {
    const p = await createProject("fix first");
    const hourMs = dayMs("2026-11-04") + 10 * 3_600_000;
    await seedHour({ projectId: p.project_id, hourMs, tool: "broken", client: "c", counters: { calls: 17, ok: 5, bad_args: 4, tool_error: 2, crashed: 6, first_call_attempts: 17, first_call_ok: 5 } });
    await seedHour({ projectId: p.project_id, hourMs, tool: "busy", client: "c", counters: { calls: 900, ok: 900, empty: 300, first_call_attempts: 900, first_call_ok: 400 } });
    const overview = await page("/?from=2026-11-04&to=2026-11-04", p.read_key);
    const list = overview.slice(overview.indexOf('<ul class="insights"'), overview.indexOf("data-small-sample-rule"));
    // One entry per tool: the worst reason first (a failure rate), the tool's others inside it.
    const entries = list.split(/<li data-kind="(\w+)" data-tool="([^"]+)">/).slice(1);
    const tools: string[] = [];
    for (let i = 0; i < entries.length; i += 3) tools.push(`${entries[i]} ${entries[i + 1]}`);
    expect(tools[0]).toBe("high_error_rate broken");
    expect(new Set(tools.map((t) => t.split(" ")[1])).size).toBe(tools.length);
    expect(tools.some((t) => t.endsWith(" busy"))).toBe(true);
    const broken = entries[2]!.slice(0, entries[2]!.indexOf('data-tool="busy"'));
    const also = [...broken.matchAll(/<ul class="also" data-also="(\d+)">/g)];
    expect(also).toHaveLength(1);
    const nested = [...broken.slice(broken.indexOf('<ul class="also"')).matchAll(/<li data-kind="(\w+)">/g)].map((m) => m[1]);
    expect(nested).toContain("crashes");
    expect(nested).toHaveLength(Number(also[0]![1]));
    // What the API lists, grouped: the same insights, none lost, none twice.
    const api = (await (await exports.default.fetch("http://worker/v1/metrics/insights?from=2026-11-04&to=2026-11-04", { headers: { authorization: `Bearer ${p.read_key}` } })).json()) as { insights: Insight[] };
    const shown = groupInsightsByTool(api.insights).slice(0, 8).flatMap((g) => [g.insight, ...g.also]);
    expect([...list.matchAll(/<li data-kind="(\w+)"/g)].map((m) => m[1])).toEqual(shown.map((i) => i.kind));
    expect(SMALL_SAMPLE_RULE).toContain(`${INSIGHT_MIN_CALLS} calls`);
    expect(SMALL_SAMPLE_RULE).toContain(`${INSIGHT_MIN_FAILURES} failed`);
    expect(textAt(overview, "data-small-sample-rule", "</p>")).toContain(SMALL_SAMPLE_RULE);
  });

  it("groups insights by tool: the worst first, a tool's others in their order, insights of no tool on their own", () => {
    const insight = (kind: string, tool: string | null) => ({ kind, tool_name: tool }) as unknown as Insight;
    const groups = groupInsightsByTool([insight("crashes", "a"), insight("high_error_rate", "b"), insight("converged_descriptions", null), insight("slow_calls", "a"), insight("empty_results", "a"), insight("converged_descriptions", null)]);
    expect(groups.map((g) => [g.insight.kind, g.insight.tool_name, g.also.map((a) => a.kind)])).toEqual([
      ["crashes", "a", ["slow_calls", "empty_results"]],
      ["high_error_rate", "b", []],
      ["converged_descriptions", null, []],
      ["converged_descriptions", null, []],
    ]);
  });
});
