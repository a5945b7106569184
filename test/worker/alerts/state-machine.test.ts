// The state machine of one (rule, scope) as a property (SPEC §5): for any series of verdicts and
// evaluation times, notifications come exactly on the transitions into and out of firing, never
// twice for one, and reminders are spaced by repeat_hours while firing.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { step, type ScopeState, type Verdict } from "../../../src/worker/alerts/state-machine.ts";

const HOUR = 3_600_000;

type Evaluation = { breaching: boolean | null; gapMs: number };

/** Reference, written as runs rather than states: firing starts when a run of evaluated breaches reaches `for`. */
function expectedNotifications(series: Evaluation[], rule: { for_evaluations: number; repeat_hours: number }) {
  const out: { i: number; kind: string }[] = [];
  let run = 0;
  let firing = false;
  let lastNotified = 0;
  let t = 0;
  series.forEach((e, i) => {
    t += e.gapMs;
    if (e.breaching === null) return;
    if (!e.breaching) {
      if (firing) out.push({ i, kind: "resolved" });
      firing = false;
      run = 0;
      return;
    }
    run += 1;
    if (!firing && run >= rule.for_evaluations) {
      firing = true;
      lastNotified = t;
      out.push({ i, kind: "firing" });
    } else if (firing && t - lastNotified >= rule.repeat_hours * HOUR) {
      lastNotified = t;
      out.push({ i, kind: "reminder" });
    }
  });
  return out;
}

const evaluation = fc.record({
  breaching: fc.oneof(fc.boolean(), fc.constant(null)),
  // Cron runs every 5 minutes, sometimes late or skipped.
  gapMs: fc.integer({ min: 1, max: 36 }).map((n) => n * 5 * 60_000),
});

describe("alert state machine", () => {
  it("notifies exactly on transitions, once each, reminders spaced by repeat_hours", () => {
    fc.assert(
      fc.property(
        fc.array(evaluation, { maxLength: 200 }),
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 1, max: 6 }),
        (series, forEvaluations, repeatHours) => {
          const rule = { for_evaluations: forEvaluations, repeat_hours: repeatHours };
          let state: ScopeState | undefined;
          let t = 1_800_000_000_000;
          const got: { i: number; kind: string }[] = [];
          const notifiedAt: { t: number; kind: string }[] = [];
          series.forEach((e, i) => {
            t += e.gapMs;
            const verdict: Verdict = { breaching: e.breaching, value: e.breaching === null ? null : 1 };
            const s = step(state, verdict, rule, t);
            if (s.notify) {
              got.push({ i, kind: s.notify });
              notifiedAt.push({ t, kind: s.notify });
            }
            // The state says what the notifications say.
            if (s.notify === "firing" || s.notify === "reminder") expect(s.next.state).toBe("firing");
            if (s.notify === "resolved") expect(s.next.state).toBe("ok");
            if (e.breaching === null && state) expect(s.next.state).toBe(state.state);
            state = s.next;
          });
          expect(got).toEqual(expectedNotifications(series, rule));
          // Firing and resolved alternate, starting with firing: never two for one transition.
          const transitions = got.filter((n) => n.kind !== "reminder").map((n) => n.kind);
          transitions.forEach((k, i) => expect(k).toBe(i % 2 === 0 ? "firing" : "resolved"));
          // Reminders only while firing, at least repeat_hours after the previous firing or reminder.
          for (let i = 1; i < notifiedAt.length; i++) {
            if (notifiedAt[i]!.kind === "reminder") expect(notifiedAt[i]!.t - notifiedAt[i - 1]!.t).toBeGreaterThanOrEqual(repeatHours * HOUR);
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it("fires on the for_evaluations-th consecutive breach, not before", () => {
    const rule = { for_evaluations: 3, repeat_hours: 24 };
    let state: ScopeState | undefined;
    const kinds: (string | null)[] = [];
    const states: string[] = [];
    for (let i = 0; i < 4; i++) {
      const s = step(state, { breaching: true, value: 1 }, rule, i * 300_000);
      kinds.push(s.notify);
      states.push(s.next.state);
      state = s.next;
    }
    expect(states).toEqual(["pending", "pending", "firing", "firing"]);
    expect(kinds).toEqual([null, null, "firing", null]);
  });

  it("a pending state that stops breaching goes back to ok without a notification", () => {
    const rule = { for_evaluations: 2, repeat_hours: 24 };
    const pending = step(undefined, { breaching: true, value: 1 }, rule, 0).next;
    const s = step(pending, { breaching: false, value: 0 }, rule, 300_000);
    expect([s.next.state, s.notify, s.next.breaches]).toEqual(["ok", null, 0]);
  });
});
