// The dashboard's words agree with its figures: a count of one reads in the singular ("1 empty
// answer", "1 retry"), and a token estimate is rounded one way everywhere — the same number in Fix
// first, in the cards and in the tables.
import { describe, expect, it } from "vitest";
import { countOf, formatTokens } from "../../src/worker/dashboard/format.ts";
import { pageHtml } from "./helpers/pages.ts";
import { createProject } from "./helpers/projects.ts";
import { dayMs, seedHour, seedRegistered } from "./metrics/seed.ts";

const text = (html: string) => html.replace(/<[^>]+>/g, " ").replace(/&#39;/g, "'").replace(/\s+/g, " ");
const RANGE = "from=2026-11-04&to=2026-11-04";

describe("dashboard wording", () => {
  it("counts in the singular for exactly one, as the count is shown", () => {
    expect(countOf(0, "retry", "retries")).toBe("0 retries");
    expect(countOf(1, "retry", "retries")).toBe("1 retry");
    expect(countOf(2, "retry", "retries")).toBe("2 retries");
    expect(countOf(1, "empty answer")).toBe("1 empty answer");
    expect(countOf(1_000, "empty answer")).toBe("1,000 empty answers");
    // The number shown decides: 1.4 reads "1", 1.5 reads "2".
    expect(countOf(1.4, "call")).toBe("1 call");
    expect(countOf(1.5, "call")).toBe("2 calls");
  });

  it("writes 1 empty answer and 1 retry on the overview and the tool page", async () => {
    const p = await createProject("one of each");
    await seedHour({ projectId: p.project_id, hourMs: dayMs("2026-11-04") + 3_600_000, tool: "lookup", client: "c", counters: { calls: 3, ok: 3, empty: 1, retries: 1, first_call_attempts: 2, first_call_ok: 1 } });
    const overview = text(await pageHtml(`/?${RANGE}`, p.read_key));
    expect(overview).toContain("1 empty answer");
    expect(overview).not.toContain("1 empty answers");
    const tool = text(await pageHtml(`/tool?name=lookup&${RANGE}`, p.read_key));
    expect(tool).toContain("1 retry · what counts?");
    expect(tool).not.toContain("1 retries");
    expect(tool).toContain("1 call was a retry");
    // More than one stays plural.
    const q = await createProject("two of each");
    await seedHour({ projectId: q.project_id, hourMs: dayMs("2026-11-04") + 3_600_000, tool: "lookup", client: "c", counters: { calls: 4, ok: 4, empty: 2, retries: 2, first_call_attempts: 2, first_call_ok: 0 } });
    expect(text(await pageHtml(`/?${RANGE}`, q.read_key))).toContain("2 empty answers");
    expect(text(await pageHtml(`/tool?name=lookup&${RANGE}`, q.read_key))).toContain("2 retries · what counts?");
  });

  it("rounds a dead tool's tokens once: Fix first, the Dead tools card and its table say the same number", async () => {
    const p = await createProject("tokens");
    await seedHour({ projectId: p.project_id, hourMs: dayMs("2026-11-04") + 3_600_000, tool: "used", client: "c", counters: { calls: 2, ok: 2, first_call_attempts: 2, first_call_ok: 2 } });
    // 267 UTF-16 units ÷ 4 = 66.75 tokens, shown as 67 everywhere (never 66.8 beside 67).
    await seedRegistered(p.project_id, "unused", { schemaBytes: 267 });
    const html = await pageHtml(`/?${RANGE}`, p.read_key);
    const overview = text(html);
    expect(overview).toContain("costs 67 tokens of schema in every session");
    expect(overview).toContain("67 wasted tokens per session");
    const deadTable = text(html.slice(html.indexOf('id="dead-tools"'), html.indexOf('id="pairs"')));
    expect(deadTable).toMatch(/unused 267 67/);
    expect(overview).not.toContain("66.8");
    expect(formatTokens(66.75)).toBe("67");
    expect(formatTokens(12_345.6)).toBe("12,346");
  });
});
