// The triggers that keep a day row equal to the sum of its hour rows (migration 0013), from a
// counter list: a counter migration recreates them (docs/architecture.md "Adding a counter"), and
// counters.test.ts checks they cover every counter. Since 0029 they fire only for hour rows in
// their day rows.
import { outOfDayRowsSql } from "./day-marks.ts";

export const DAY_TRIGGER_NAMES = ["tool_hour_metrics_add_to_day", "tool_hour_metrics_change_day"] as const;

/** The day row's histogram plus `other` (a histogram JSON, buckets summed, zero buckets dropped). */
/** Exported for the fold of finished days (rollup/day-fold.ts), which adds hour rows to day rows the same way. */
export const addHistogramsSql = (dayColumn: string, other: string) => `(SELECT COALESCE(json_group_object(key, calls ORDER BY CAST(key AS INTEGER)), '{}') FROM (
        SELECT key, SUM(value) AS calls FROM (
          SELECT key, value FROM json_each(${dayColumn}) UNION ALL SELECT key, value FROM json_each(${other}))
        GROUP BY key HAVING SUM(value) <> 0))`;

export function dayTriggerStatements(counters: readonly string[]): string[] {
  const columns = `project_id, day_start_ms, tool_name, client_name, ${counters.join(", ")}, duration_histogram_json`;
  const dayOfHour = "NEW.project_id, NEW.hour_start_ms - NEW.hour_start_ms % 86400000, NEW.tool_name, NEW.client_name";
  const addExcluded = [
    ...counters.map((c) => `      ${c} = ${c} + excluded.${c},`),
    `      duration_histogram_json = ${addHistogramsSql("tool_day_metrics.duration_histogram_json", "excluded.duration_histogram_json")};`,
  ].join("\n");
  const onInsert = `CREATE TRIGGER ${DAY_TRIGGER_NAMES[0]} AFTER INSERT ON tool_hour_metrics
  WHEN NOT ${outOfDayRowsSql("NEW")} BEGIN
  INSERT INTO tool_day_metrics (${columns})
    VALUES (${dayOfHour},
      ${counters.map((c) => `NEW.${c}`).join(", ")}, NEW.duration_histogram_json)
    ON CONFLICT (project_id, day_start_ms, tool_name, client_name) DO UPDATE SET
${addExcluded}
END;`;
  const onUpdate = `CREATE TRIGGER ${DAY_TRIGGER_NAMES[1]} AFTER UPDATE ON tool_hour_metrics
  WHEN NOT ${outOfDayRowsSql("NEW")} BEGIN
  INSERT INTO tool_day_metrics (${columns})
    VALUES (${dayOfHour},
      ${counters.map((c) => `NEW.${c} - OLD.${c}`).join(", ")},
      (SELECT COALESCE(json_group_object(key, calls ORDER BY CAST(key AS INTEGER)), '{}') FROM (
        SELECT key, SUM(value) AS calls FROM (
          SELECT key, value FROM json_each(NEW.duration_histogram_json) UNION ALL SELECT key, -value FROM json_each(OLD.duration_histogram_json))
        GROUP BY key HAVING SUM(value) <> 0)))
    ON CONFLICT (project_id, day_start_ms, tool_name, client_name) DO UPDATE SET
${addExcluded}
END;`;
  return [onInsert, onUpdate];
}

/** 0 everywhere, so every day row still equals the sum of its hours. */
export function addCounterStatements(counter: string, counters: readonly string[]): string[] {
  if (!/^[a-z][a-z0-9_]*$/.test(counter)) throw new Error(`not a column name: ${counter}`);
  if (!counters.includes(counter)) throw new Error(`${counter} is not in the counter list: add it to COUNTERS first`);
  return [
    `ALTER TABLE tool_hour_metrics ADD COLUMN ${counter} INTEGER NOT NULL DEFAULT 0;`,
    `ALTER TABLE tool_day_metrics ADD COLUMN ${counter} INTEGER NOT NULL DEFAULT 0;`,
    ...DAY_TRIGGER_NAMES.map((name) => `DROP TRIGGER IF EXISTS ${name};`),
    ...dayTriggerStatements(counters),
  ];
}

export function addCounterMigration(counter: string, counters: readonly string[]): string {
  return [
    `-- Adds the counter ${counter} (src/worker/metrics/counters.ts): its column on hour and day rows, and the`,
    `-- day triggers of 0013 recreated with it, so that day rows stay equal to the sum of their hours.`,
    ...addCounterStatements(counter, counters),
    "",
  ].join("\n");
}
