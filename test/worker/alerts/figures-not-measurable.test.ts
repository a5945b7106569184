// An alert on first-call success never fires on a window whose figure is not measurable (OTLP calls
// without arguments, SPEC §10): the verdict is "not evaluated", as over too few calls.
import { describe, expect, it } from "vitest";
import { metricVerdict } from "../../../src/worker/alerts/figures.ts";
import { emptyGroup, type CounterGroup } from "../../../src/worker/metrics/counters.ts";

function group(counters: Partial<CounterGroup["counters"]>): CounterGroup {
  const g = emptyGroup();
  Object.assign(g.counters, counters);
  return g;
}

const rule = { metric: "first_call_rate" as const, op: "<" as const, threshold: 0.9, min_calls: 10 };

describe("first_call_rate rules and calls without arguments", () => {
  it("evaluates SDK calls: 5 of 20 first calls ok breaches < 0.9", () => {
    expect(metricVerdict(rule, group({ calls: 20, ok: 20, first_call_attempts: 20, first_call_ok: 5 }))).toEqual({ breaching: true, value: 0.25 });
  });

  it("does not evaluate a window with calls without an args_hash, whatever the counted chains say", () => {
    expect(metricVerdict(rule, group({ calls: 20, ok: 20, first_call_attempts: 20, first_call_ok: 5, calls_without_args_hash: 20 }))).toEqual({ breaching: null, value: null });
    expect(metricVerdict(rule, group({ calls: 20, ok: 20, first_call_attempts: 20, first_call_ok: 5, calls_without_args_hash: 1 }))).toEqual({ breaching: null, value: null });
  });

  it("still evaluates the other figures of such a window", () => {
    expect(metricVerdict({ ...rule, metric: "error_rate", op: ">", threshold: 0.1 }, group({ calls: 20, ok: 10, crashed: 10, calls_without_args_hash: 20 }))).toEqual({ breaching: true, value: 0.5 });
  });
});
