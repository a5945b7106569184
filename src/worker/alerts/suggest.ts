// "Alert me on this" (issue: alerts): the rule an insight suggests, in the fields the admin API takes
// (CreateRuleBody, what POST …/alert-rules takes), so the dashboard can write out the request that creates it. An insight whose
// figure has no alert metric (large responses, converged descriptions) suggests none.
import { z } from "zod";
import { INSIGHT_KINDS, INSIGHT_THRESHOLDS, type InsightKind } from "../metrics/insights.ts";
import { MAX_TOOL_NAME_CHARS } from "../../shared/limits.ts";

/** The alerts page's query: `suggest` (an insight kind) and its `tool`, when opened from an insight. */
export const alertsPageQuery = z.strictObject({
  suggest: z.enum(INSIGHT_KINDS, { error: "'suggest' must be an insight kind" }).optional(),
  tool: z.string({ error: "'tool' must be given once" }).min(1, { error: "'tool' must not be empty" }).max(MAX_TOOL_NAME_CHARS, { error: `'tool' is longer than ${MAX_TOOL_NAME_CHARS} characters` }).optional(),
  key: z.unknown().optional(),
});

export type SuggestedRule = { name: string; tool: string | null } & (
  | { metric: "first_call_rate" | "empty_rate" | "p95_ms" | "error_rate" | "crash_rate"; op: "<" | ">"; threshold: number }
  | { event: "dead_tool" }
);

export function ruleForInsight(kind: InsightKind, tool: string | null): SuggestedRule | null {
  const about = tool ?? "the project";
  switch (kind) {
    case "crashes":
      return { name: `crashes of ${about}`, metric: "crash_rate", op: ">", threshold: INSIGHT_THRESHOLDS.crashRateAbove, tool };
    case "high_error_rate":
      return { name: `error rate of ${about}`, metric: "error_rate", op: ">", threshold: INSIGHT_THRESHOLDS.errorRateAbove, tool };
    case "low_first_call_success":
      return { name: `first-call success of ${about}`, metric: "first_call_rate", op: "<", threshold: INSIGHT_THRESHOLDS.firstCallRateBelow, tool };
    case "empty_results":
      return { name: `empty results of ${about}`, metric: "empty_rate", op: ">", threshold: INSIGHT_THRESHOLDS.emptyRateAbove, tool };
    case "slow_calls":
      return { name: `p95 latency of ${about}`, metric: "p95_ms", op: ">", threshold: INSIGHT_THRESHOLDS.slowMs, tool };
    case "dead_tool":
      return { name: `${about} unused`, event: "dead_tool", tool };
    case "large_responses":
    case "converged_descriptions":
      return null;
  }
}
