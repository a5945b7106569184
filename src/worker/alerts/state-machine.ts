// The state of one (rule, scope) across evaluations (SPEC §5): ok → pending → firing → ok, and which
// notification each step queues. Pure: the same inputs always give the same step, so the property
// test can drive it with any series.
import { ALERT_STATES, NOTIFICATION_KINDS, type StateRow } from "../db/alerts.ts";
import { HOUR_MS } from "../time.ts";

export { ALERT_STATES, NOTIFICATION_KINDS };
export type AlertState = (typeof ALERT_STATES)[number];
export type NotificationKind = (typeof NOTIFICATION_KINDS)[number];

/** The part of a state row (db/alerts.ts, declared there once) that the state machine moves. */
export type ScopeState = Pick<StateRow, "state" | "breaches" | "since_ms" | "value" | "last_evaluated_ms" | "last_notified_ms">;

/**
 * One evaluation's verdict: `breaching` true or false, or null when the scope was not evaluated
 * (fewer calls than min_calls): then nothing moves — no transition, no reminder, the count of
 * consecutive breaches keeps its place.
 */
export type Verdict = { breaching: boolean | null; value: number | null };

export type StepRule = { for_evaluations: number; repeat_hours: number };

export type Step = { next: ScopeState; notify: Exclude<NotificationKind, "test"> | null };

export function initialState(nowMs: number): ScopeState {
  return { state: "ok", breaches: 0, since_ms: nowMs, value: null, last_evaluated_ms: nowMs, last_notified_ms: null };
}

export function step(previous: ScopeState | undefined, verdict: Verdict, rule: StepRule, nowMs: number): Step {
  const prev = previous ?? initialState(nowMs);
  const base = { ...prev, value: verdict.value, last_evaluated_ms: nowMs };
  // Not evaluated: the figure is not kept (a value over the threshold beside "ok" reads as a broken
  // rule), so a reader sees "not evaluated" — the state table's `value` is NULL exactly then.
  if (verdict.breaching === null) return { next: { ...base, value: null }, notify: null };
  if (!verdict.breaching) {
    if (prev.state === "ok") return { next: { ...base, breaches: 0 }, notify: null };
    const next: ScopeState = { ...base, state: "ok", breaches: 0, since_ms: nowMs };
    return { next, notify: prev.state === "firing" ? "resolved" : null };
  }
  const breaches = prev.breaches + 1;
  if (prev.state === "firing") {
    const due = prev.last_notified_ms === null || nowMs - prev.last_notified_ms >= rule.repeat_hours * HOUR_MS;
    return due
      ? { next: { ...base, breaches, last_notified_ms: nowMs }, notify: "reminder" }
      : { next: { ...base, breaches }, notify: null };
  }
  if (breaches >= rule.for_evaluations) {
    return { next: { ...base, state: "firing", breaches, since_ms: nowMs, last_notified_ms: nowMs }, notify: "firing" };
  }
  const since = prev.state === "pending" ? prev.since_ms : nowMs;
  return { next: { ...base, state: "pending", breaches, since_ms: since }, notify: null };
}
