// Reconciliation of Analytics Engine with D1 (SPEC §8): for each (project, hour, tool), AE's
// weighted call count against the rollup's hour row. Unsampled, they must be equal; sampled, within
// three standard errors of AE's own estimate. Pure: both sides are read by the caller.
export type HourlyCalls = { project_id: string; hour_ms: number; tool: string; calls: number };
export type HourlyEstimate = HourlyCalls & { variance: number; sample_interval_max: number };

export type Drift = { project_id: string; hour: string; tool: string; d1_calls: number; ae_calls: number };

export type Reconciliation = {
  groups: number;
  d1_calls: number;
  ae_calls: number;
  sampled: boolean;
  /** Groups whose counts differ by more than sampling explains (any difference when unsampled). */
  drifting: number;
  /** The worst of them, by absolute difference. */
  worst: Drift | null;
};

export function reconcile(d1: readonly HourlyCalls[], ae: readonly HourlyEstimate[]): Reconciliation {
  const key = (r: HourlyCalls) => JSON.stringify([r.project_id, r.hour_ms, r.tool]);
  const pairs = new Map<string, { base: HourlyCalls; d1: number; ae: number; variance: number }>();
  for (const r of d1) pairs.set(key(r), { base: r, d1: (pairs.get(key(r))?.d1 ?? 0) + r.calls, ae: 0, variance: 0 });
  let sampled = false;
  for (const r of ae) {
    const entry = pairs.get(key(r)) ?? { base: r, d1: 0, ae: 0, variance: 0 };
    entry.ae += r.calls;
    entry.variance += r.variance;
    sampled ||= r.sample_interval_max > 1;
    pairs.set(key(r), entry);
  }
  let drifting = 0;
  let worst: Drift | null = null;
  let worstGap = 0;
  let d1Calls = 0;
  let aeCalls = 0;
  for (const p of pairs.values()) {
    d1Calls += p.d1;
    aeCalls += p.ae;
    const gap = Math.abs(p.ae - p.d1);
    if (gap > 3 * Math.sqrt(p.variance)) {
      drifting++;
      if (gap > worstGap) {
        worstGap = gap;
        worst = { project_id: p.base.project_id, hour: new Date(p.base.hour_ms).toISOString(), tool: p.base.tool, d1_calls: p.d1, ae_calls: p.ae };
      }
    }
  }
  return { groups: pairs.size, d1_calls: d1Calls, ae_calls: aeCalls, sampled, drifting, worst };
}
