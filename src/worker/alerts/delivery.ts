// Delivery of the outbox (SPEC §5), from the cron after evaluation: timeouts, bounded concurrency,
// every attempt recorded, retries until 24 h after queueing. Three D1 statements per run, whatever
// the number of notifications.
import { dueNotificationsStatement, recordAttemptsStatements, type AttemptWrite, type DueNotificationRow } from "../db/alerts.ts";
import { HOUR_MS } from "../time.ts";
import { renderRequest } from "./formats.ts";
import type { NotificationPayload } from "./notification.ts";
import { DESTINATION_KINDS } from "./rules.ts";
import { checkTarget } from "./targets.ts";

const MINUTE_MS = 60_000;
/** Waits after the 1st, 2nd, 3rd and 4th failed attempt; after that every RETRY_EVERY_MS. */
export const RETRY_DELAYS_MS = [MINUTE_MS, 5 * MINUTE_MS, 30 * MINUTE_MS, 2 * HOUR_MS] as const;
export const RETRY_EVERY_MS = 6 * HOUR_MS;
/** A notification not delivered this long after it was queued is given up (status `failed`). */
export const GIVE_UP_AFTER_MS = 24 * HOUR_MS;
/** One attempt waits at most this long for an answer. */
export const DELIVERY_TIMEOUT_MS = 5_000;
/** Requests in flight at once: Workers allow 6 simultaneous open connections per invocation. */
export const DELIVERY_CONCURRENCY = 6;
/** Attempts per run, and per destination per run (so one destination's backlog waits its turn). */
export const DELIVERIES_PER_RUN = 30;
export const DELIVERIES_PER_DESTINATION_PER_RUN = 3;
/** The due query and the two writes that record the attempts. */
export const DELIVERY_STATEMENTS = 3;

export const ERROR_CLASSES = ["timeout", "network", "http_3xx", "http_4xx", "http_5xx", "invalid_target", "no_destination"] as const;
export type ErrorClass = (typeof ERROR_CLASSES)[number];

/** When to try again after failed attempt number `attempt` (1-based), or null to give up. */
export function nextAttemptAtMs(createdAtMs: number, attempt: number, attemptedAtMs: number): number | null {
  const next = attemptedAtMs + (RETRY_DELAYS_MS[attempt - 1] ?? RETRY_EVERY_MS);
  return next <= createdAtMs + GIVE_UP_AFTER_MS ? next : null;
}

export type DeliveryOptions = {
  maxStatements: number;
  /** Whether http://127.0.0.1, localhost and [::1] targets are allowed (targets.ts runsLocally). */
  local: boolean;
  timeoutMs?: number;
  concurrency?: number;
  limit?: number;
  perDestination?: number;
};

export type DeliveryReport = {
  statements: number;
  attempted: number;
  delivered: number;
  retrying: number;
  failed: number;
  skipped?: "budget";
};

export async function deliverDue(db: D1Database, nowMs: number, options: DeliveryOptions): Promise<DeliveryReport> {
  const report: DeliveryReport = { statements: 0, attempted: 0, delivered: 0, retrying: 0, failed: 0 };
  if (options.maxStatements < DELIVERY_STATEMENTS) return { ...report, skipped: "budget" };
  const limit = options.limit ?? DELIVERIES_PER_RUN;
  const perDestination = options.perDestination ?? DELIVERIES_PER_DESTINATION_PER_RUN;
  const { results: due } = await dueNotificationsStatement(db, nowMs, limit, perDestination).all<DueNotificationRow>();
  report.statements += 1;
  if (due.length === 0) return report;

  const attempts: AttemptWrite[] = [];
  let next = 0;
  const worker = async () => {
    while (next < due.length) {
      const row = due[next++]!;
      attempts.push(await attempt(row, nowMs, options));
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.concurrency ?? DELIVERY_CONCURRENCY, due.length) }, worker));

  await db.batch(recordAttemptsStatements(db, JSON.stringify(attempts)));
  report.statements += 2;
  report.attempted = attempts.length;
  for (const a of attempts) {
    if (a.status === "delivered") report.delivered += 1;
    else if (a.status === "failed") report.failed += 1;
    else report.retrying += 1;
  }
  return report;
}

/** One attempt; never throws. The URL and secret stay in this function: nothing of them is logged. */
async function attempt(row: DueNotificationRow, nowMs: number, options: DeliveryOptions): Promise<AttemptWrite> {
  const number = Number(row.attempts) + 1;
  const base = { notification_id: Number(row.notification_id), project_id: row.project_id, attempt: number, attempted_at_ms: nowMs };
  const giveUp = (error_class: ErrorClass): AttemptWrite => ({ ...base, http_status: null, latency_ms: 0, error_class, status: "failed", next_attempt_at_ms: null });
  const kind = DESTINATION_KINDS.find((k) => k === row.destination_kind);
  if (kind === undefined || row.url === null) return giveUp("no_destination");
  const target = checkTarget(row.url, options.local);
  if (!target.ok) return giveUp("invalid_target");

  const payload = JSON.parse(row.payload_json) as NotificationPayload;
  // The signature's timestamp is the send time on the wall clock, which is what a receiver compares
  // with its own clock to reject replays (docs/alerts.md); scheduling uses the run's time.
  const request = await renderRequest(kind, payload, row.secret, Date.now());
  const started = Date.now();
  let httpStatus: number | null = null;
  let errorClass: ErrorClass | null = null;
  try {
    const res = await fetch(target.url, {
      method: "POST",
      headers: request.headers,
      body: request.body,
      // A redirect could lead anywhere: a webhook that moved is reported, not followed.
      redirect: "manual",
      signal: AbortSignal.timeout(options.timeoutMs ?? DELIVERY_TIMEOUT_MS),
    });
    httpStatus = res.status;
    await res.body?.cancel();
    if (res.status >= 500) errorClass = "http_5xx";
    else if (res.status >= 400) errorClass = "http_4xx";
    else if (res.status >= 300) errorClass = "http_3xx";
  } catch (err) {
    const name = (err as { name?: string } | null)?.name;
    errorClass = name === "TimeoutError" || name === "AbortError" ? "timeout" : "network";
  }
  const latency = Math.max(0, Date.now() - started);
  if (errorClass === null) {
    return { ...base, http_status: httpStatus, latency_ms: latency, error_class: null, status: "delivered", next_attempt_at_ms: null };
  }
  const retryAt = nextAttemptAtMs(Number(row.created_at_ms), number, nowMs);
  return {
    ...base,
    http_status: httpStatus,
    latency_ms: latency,
    error_class: errorClass,
    status: retryAt === null ? "failed" : "pending",
    next_attempt_at_ms: retryAt,
  };
}
