// GET /v1/metrics/insights: each threshold at, just under and just over it; the 20-call floor;
// dead tools with tokens per session; converged descriptions; the documented ranking.
import { describe, expect, it } from "vitest";
import { bucketLowerMs, durationBucket } from "../../../src/worker/histogram.ts";
import { slowCallCount } from "../../../src/worker/metrics/insights.ts";
import { createProject } from "../helpers/projects.ts";
import { dayMs, getJson, histogramOf, seedHour, seedRegistered } from "./seed.ts";

type Insight = { kind: string; severity: string; tool_name: string | null; tools: string[]; value: number; affected_calls: number; calls: number; message: string };

describe("GET /v1/metrics/insights", () => {
  it("flags each threshold only when crossed, never under 20 calls, ranked by severity then affected calls", async () => {
    const p = await createProject();
    const hourMs = dayMs("2026-10-01") + 9 * 3_600_000;
    const put = (tool: string, counters: Record<string, number>, durations?: number[]) =>
      seedHour({ projectId: p.project_id, hourMs, tool, client: "c", counters, ...(durations ? { histogram: histogramOf(durations) } : {}) });
    const okCalls = (n: number) => ({ calls: n, ok: n, first_call_attempts: n, first_call_ok: n });

    await put("flaky", { ...okCalls(40), first_call_ok: 16 }); // 40 %: high, 24 failed first calls
    await put("meh", { ...okCalls(20), first_call_ok: 13 }); // 65 % at exactly 20 calls: medium
    await put("fcr_edge", { ...okCalls(20), first_call_ok: 14 }); // exactly 70 %: not under it
    await put("few", { ...okCalls(19), first_call_ok: 0, empty: 19, response_bytes_sum: 19 * 50_000 }, Array(19).fill(5000)); // 19 calls: nothing
    await put("empties", { ...okCalls(100), empty: 6 }); // 6 %: medium
    await put("empty_edge", { ...okCalls(100), empty: 5 }); // exactly 5 %: not over it
    await put("big", { ...okCalls(20), response_bytes_sum: 20 * 10_001 }); // avg 10,001: medium
    await put("big_edge", { ...okCalls(20), response_bytes_sum: 20 * 10_000 }); // avg 10,000: not over it
    await put("slow", okCalls(20), [...Array(17).fill(100), 2100, 2100, 2100]); // 15 % over 2 s: medium
    await put("slow_edge", okCalls(20), [...Array(18).fill(100), 2100, 2100]); // exactly 10 %: not over it
    await put("at_two_seconds", okCalls(20), [...Array(10).fill(100), ...Array(10).fill(2000)]); // 2,000 ms is not slower than 2 s
    await seedRegistered(p.project_id, "ghost", { schemaBytes: 4000, descriptionNorm: "111111111111" }); // 1,000 tokens: high
    await seedRegistered(p.project_id, "ghost_small", { schemaBytes: 100, descriptionNorm: "222222222222" }); // 25 tokens: low
    await seedRegistered(p.project_id, "guarded", { schemaBytes: 9000, requiresAuthorization: true }); // exempt
    await seedRegistered(p.project_id, "twin_a", { descriptionNorm: "abcabcabcabc" });
    await seedRegistered(p.project_id, "twin_b", { descriptionNorm: "abcabcabcabc" });
    await put("twin_a", okCalls(1));
    await put("twin_b", okCalls(1));

    const { status, body } = await getJson<{ insights: Insight[] }>("/v1/metrics/insights?from=2026-10-01&to=2026-10-01", p.read_key);
    expect(status).toBe(200);
    expect(body.insights.map((i) => [i.severity, i.kind, i.tool_name ?? i.tools.join("+"), i.affected_calls])).toEqual([
      ["high", "low_first_call_success", "flaky", 24],
      ["high", "dead_tool", "ghost", 0],
      ["medium", "large_responses", "big", 20],
      ["medium", "low_first_call_success", "meh", 7],
      ["medium", "empty_results", "empties", 6],
      ["medium", "slow_calls", "slow", 3],
      ["low", "dead_tool", "ghost_small", 0],
      ["low", "converged_descriptions", "twin_a+twin_b", 0],
    ]);
    const ghost = body.insights.find((i) => i.tool_name === "ghost");
    expect(ghost).toMatchObject({ value: 1000, message: expect.stringContaining("1,000 tokens") });
    expect(body.insights.find((i) => i.tool_name === "slow")?.value).toBe(0.15);
    expect(body.insights.find((i) => i.tool_name === "flaky")?.value).toBe(0.4);

    // Filters narrow the insights like the tools table.
    const one = await getJson<{ insights: Insight[] }>("/v1/metrics/insights?from=2026-10-01&to=2026-10-01&tool=flaky", p.read_key);
    expect(one.body.insights.map((i) => i.tool_name)).toEqual(["flaky"]);
    const otherClient = await getJson<{ insights: Insight[] }>("/v1/metrics/insights?from=2026-10-01&to=2026-10-01&client=nobody", p.read_key);
    // For a client that called nothing every registered tool without a policy is dead.
    expect(otherClient.body.insights.filter((i) => i.kind === "dead_tool").map((i) => i.tool_name).sort()).toEqual(["ghost", "ghost_small", "twin_a", "twin_b"]);
  });

  it("lists error and crash rates, from 5 failed calls on under 20 calls, failed calls first within a severity", async () => {
    const p = await createProject();
    const hourMs = dayMs("2026-10-02") + 9 * 3_600_000;
    const put = (tool: string, counters: Record<string, number>) =>
      seedHour({ projectId: p.project_id, hourMs, tool, client: "c", counters: { first_call_attempts: counters.calls ?? 0, first_call_ok: counters.ok ?? 0, ...counters } });
    // 12 of 17 calls failed (70.6 %), 6 crashed: under the 20-call floor, listed by the small-sample rule.
    await put("worst", { calls: 17, ok: 5, bad_args: 4, tool_error: 2, crashed: 6 });
    await put("flaky", { calls: 400, ok: 400, first_call_attempts: 400, first_call_ok: 100 }); // 300 failed first calls: high
    await put("five_errors", { calls: 10, ok: 5, tool_error: 5 }); // exactly 5 failures under 20 calls: listed
    await put("four_errors", { calls: 10, ok: 6, tool_error: 4 }); // 4 failures under 20 calls: not judged
    await put("error_edge", { calls: 20, ok: 18, bad_args: 2 }); // exactly 10 %: not over it
    await put("error_over", { calls: 100, ok: 89, bad_args: 11 }); // 11 %: medium
    await put("crash_edge", { calls: 100, ok: 99, crashed: 1 }); // exactly 1 %: not over it (errors 1 %: no)
    await put("crash_over", { calls: 200, ok: 197, crashed: 3 }); // 1.5 % crashes: medium (errors 1.5 %: no)
    const { body } = await getJson<{ insights: Insight[] }>("/v1/metrics/insights?from=2026-10-02&to=2026-10-02", p.read_key);
    expect(body.insights.map((i) => [i.severity, i.kind, i.tool_name, i.affected_calls])).toEqual([
      ["high", "high_error_rate", "worst", 12],
      ["high", "crashes", "worst", 6],
      ["high", "high_error_rate", "five_errors", 5],
      ["high", "low_first_call_success", "flaky", 300],
      ["medium", "high_error_rate", "error_over", 11],
      ["medium", "crashes", "crash_over", 3],
    ]);
    const worst = body.insights[0]!;
    expect(worst).toMatchObject({ value: 0.7059, threshold: 0.1, calls: 17 });
    expect(worst.message).toBe("70.6 % of calls to worst fail (4 bad arguments, 2 tool errors, 6 crashes of 17 calls)");
    expect(body.insights[1]).toMatchObject({ value: 0.3529, threshold: 0.01 });
  });

  it("says when converged tools are the ones without a description", async () => {
    const p = await createProject();
    await seedRegistered(p.project_id, "blank_a", { descriptionNorm: "e3b0c44298fc" });
    await seedRegistered(p.project_id, "blank_b", { descriptionNorm: "e3b0c44298fc" });
    await seedRegistered(p.project_id, "unsent", { descriptionNorm: null });
    const { body } = await getJson<{ insights: Insight[] }>("/v1/metrics/insights?from=2026-10-01&to=2026-10-01", p.read_key);
    const converged = body.insights.filter((i) => i.kind === "converged_descriptions");
    expect(converged.map((i) => i.tools)).toEqual([["blank_a", "blank_b"]]);
    expect(converged[0]?.message).toContain("have no description");
  });

  it("counts only buckets entirely above 2,000 ms as slow (the straddling bucket is left out)", () => {
    const straddling = durationBucket(2000);
    expect(bucketLowerMs(straddling)).toBeLessThanOrEqual(2000);
    expect(bucketLowerMs(straddling + 1)).toBeGreaterThan(2000);
    expect(slowCallCount(histogramOf([2000, 2001, bucketLowerMs(straddling + 1), 10_000]), 2000)).toBe(2);
    expect(slowCallCount({}, 2000)).toBe(0);
  });
});
