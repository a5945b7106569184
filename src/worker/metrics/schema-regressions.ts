// GET /v1/metrics/schema-regressions: per tool whose schema changed, bad_args rate and first-call
// success before and after the change, in a constant number of D1 statements whatever the number
// of changed tools (the windows of all tools are one statement, counter-sums.ts).
import { listRegisteredTools, listToolVersions, type RegisteredToolRow, type ToolVersionRow } from "../db/metrics.ts";
import { sumToolWindows } from "./counter-sums.ts";
import { REGRESSION_WINDOW_DAYS, latestSchemaChange, schemaChangeWindows } from "./schema-change.ts";
import type { RegressionSide, SchemaRegression, SchemaRegressionsReport } from "./answers.ts";
import { rate, roundTo, type Counters } from "./counters.ts";
import { INSIGHT_MIN_CALLS } from "./insights.ts";
import type { ReadFilters } from "./query.ts";
import { asOfIso, type ReadScope } from "./scope.ts";

export { REGRESSION_WINDOW_DAYS, latestSchemaChange } from "./schema-change.ts";

/** Both sides need this many calls before `regressed` can be true. */
export const REGRESSION_MIN_CALLS = INSIGHT_MIN_CALLS;
/** A rise in bad_args rate or a fall in first-call success of at least this much is a regression. */
export const REGRESSION_RATE_DELTA = 0.05;

export type { RegressionSide, SchemaRegression } from "./answers.ts";

function regressionSide(counters: Counters, startMs: number, endMs: number): RegressionSide {
  return {
    from: new Date(startMs).toISOString(),
    to: new Date(endMs).toISOString(),
    calls: counters.calls,
    bad_args: counters.bad_args,
    bad_args_rate: rate(counters.bad_args, counters.calls),
    first_call_attempts: counters.first_call_attempts,
    first_call_ok: counters.first_call_ok,
    first_call_rate: rate(counters.first_call_ok, counters.first_call_attempts),
  };
}

function change(after: number | null, before: number | null): number | null {
  return after === null || before === null ? null : roundTo(after - before, 4);
}

/**
 * Per registered tool whose schema_hash changed: bad_args rate and first-call success over the
 * REGRESSION_WINDOW_DAYS before the hour of the change and the same span after it, from hour rows.
 * The hour holding the change mixes both schemas and is left out of both sides. `registered` and
 * `versions` (of the `tool` filter) are the caller's when it has them already.
 */
export async function loadSchemaRegressions(
  scope: ReadScope,
  filters: ReadFilters,
  rows?: { registered: RegisteredToolRow[]; versions: ToolVersionRow[] },
): Promise<SchemaRegression[]> {
  const [registered, versions] = rows
    ? [rows.registered, rows.versions]
    : await Promise.all([listRegisteredTools(scope.db, scope.projectId), listToolVersions(scope.db, scope.projectId, filters.tool)]);
  const versionsByTool = new Map<string, ToolVersionRow[]>();
  for (const v of versions) {
    const list = versionsByTool.get(v.tool_name) ?? [];
    list.push(v);
    versionsByTool.set(v.tool_name, list);
  }
  const candidates = registered.flatMap((tool) => {
    if (tool.schema_hash === null) return [];
    if (filters.tool !== undefined && tool.tool_name !== filters.tool) return [];
    const found = latestSchemaChange(tool.schema_hash, versionsByTool.get(tool.tool_name) ?? []);
    if (!found) return [];
    return [{ tool, ...found, ...schemaChangeWindows(found.changedAtMs) }];
  });
  const sums = await sumToolWindows(
    scope,
    candidates.flatMap(({ tool, before, after }) => [
      { tool: tool.tool_name, ...before },
      { tool: tool.tool_name, ...after },
    ]),
    filters.client,
  );
  const regressions = candidates.map(({ tool, changedAtMs, previous, before, after }, i) => {
    const beforeSide = regressionSide(sums[2 * i] as Counters, before.startMs, before.endMs);
    const afterSide = regressionSide(sums[2 * i + 1] as Counters, after.startMs, after.endMs);
    const badArgsChange = change(afterSide.bad_args_rate, beforeSide.bad_args_rate);
    const firstCallChange = change(afterSide.first_call_rate, beforeSide.first_call_rate);
    const enough = beforeSide.calls >= REGRESSION_MIN_CALLS && afterSide.calls >= REGRESSION_MIN_CALLS;
    return {
      tool_name: tool.tool_name,
      schema_hash: tool.schema_hash as string,
      previous_schema_hash: previous,
      changed_at: new Date(changedAtMs).toISOString(),
      before: beforeSide,
      after: afterSide,
      bad_args_rate_change: badArgsChange,
      first_call_rate_change: firstCallChange,
      regressed:
        enough &&
        ((badArgsChange !== null && badArgsChange >= REGRESSION_RATE_DELTA) ||
          (firstCallChange !== null && firstCallChange <= -REGRESSION_RATE_DELTA)),
    } satisfies SchemaRegression;
  });
  regressions.sort((a, b) => Number(b.regressed) - Number(a.regressed) || (a.tool_name < b.tool_name ? -1 : 1));
  return regressions;
}

export async function schemaRegressionsReport(
  scope: ReadScope,
  filters: ReadFilters,
): Promise<SchemaRegressionsReport> {
  const [regressions, asOf] = await Promise.all([loadSchemaRegressions(scope, filters), asOfIso(scope)]);
  return { as_of: asOf, window_days: REGRESSION_WINDOW_DAYS, regressions };
}
