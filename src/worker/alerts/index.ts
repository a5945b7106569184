// The alert step of the 5-minute cron (SPEC §5): evaluation after the rollup run, then delivery of
// the outbox, inside what is left of the invocation's D1 statement budget. It never throws: a
// failing alert step must never fail the rollup, whose work is already committed.
import type { Env } from "../env.ts";
import { DELIVERY_STATEMENTS, deliverDue, type DeliveryReport } from "./delivery.ts";
import { evaluateAlerts, type EvaluationReport } from "./evaluate.ts";
import { runsLocally } from "./targets.ts";
import { log } from "../log.ts";

export { evaluateAlerts, type EvaluationReport } from "./evaluate.ts";
export { deliverDue, type DeliveryReport } from "./delivery.ts";

/** D1 queries one invocation may make: 50 on the Workers Free plan, 1,000 on Paid. */
export const DEFAULT_D1_QUERIES_PER_INVOCATION = 50;

/** `D1_QUERIES_PER_INVOCATION` when it is a whole number from 1 to 1,000, else 50. */
export function parseQueriesPerInvocation(value: string | undefined): number {
  const n = Number(value);
  return value !== undefined && Number.isInteger(n) && n >= 1 && n <= 1000 ? n : DEFAULT_D1_QUERIES_PER_INVOCATION;
}

export type AlertStepReport = { evaluation: EvaluationReport | null; delivery: DeliveryReport | null; error?: string };

/**
 * Runs after a rollup run of database `db` that spent `rollup.queries` statements, on the rules of
 * that database's projects. Evaluates only when the rollup caught up: a run that left calls pending
 * would compare incomplete counters (a false traffic drop).
 */
export async function runAlertStep(
  env: Env,
  db: D1Database,
  scheduledTimeMs: number,
  rollup: { queries: number; caughtUp: boolean },
): Promise<AlertStepReport> {
  const report: AlertStepReport = { evaluation: null, delivery: null };
  let budget = parseQueriesPerInvocation(env.D1_QUERIES_PER_INVOCATION) - rollup.queries;
  try {
    if (rollup.caughtUp) {
      // Delivery's statements are kept back, so a large evaluation never starves the outbox.
      report.evaluation = await evaluateAlerts(db, scheduledTimeMs, { maxStatements: budget - DELIVERY_STATEMENTS, publicUrl: env.PUBLIC_URL });
      budget -= report.evaluation.statements;
    }
    report.delivery = await deliverDue(db, scheduledTimeMs, { maxStatements: budget, local: runsLocally(env) });
  } catch (err) {
    // The error's name only: a message could quote a URL.
    report.error = (err as { name?: string } | null)?.name ?? "Error";
  }
  log.info("alerts", { ...report });
  return report;
}
