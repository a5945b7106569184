// Figures that explain themselves: a first-call success or a retry count opens (a <details>, no
// script) to what it is made of — chains, retried chains, first calls that failed or came back
// empty, and how many calls had a known session — in SPEC §2.2's words (metrics/definitions.ts).
import type { FC } from "hono/jsx";
import { DEFINITIONS } from "../metrics/definitions.ts";
import type { CounterFigures } from "../metrics/counters.ts";
import { countOf, formatInt, formatRate } from "./format.ts";

/**
 * The share of calls whose session was known (SPEC §2.2, §2.4: a call without one is a chain of
 * one, so only there can retries be measured); null without calls.
 */
export function knownSessionShare(f: Pick<CounterFigures, "calls" | "calls_without_session">): number | null {
  return f.calls === 0 ? null : Math.max(0, f.calls - f.calls_without_session) / f.calls;
}

/**
 * What a first-call success is made of, from the additive counters alone (SPEC §2.2). A chain fails
 * at its first call for one of three reasons — the call failed, it was empty, or it was retried —
 * and the counters do not split chains by reason, so the split is given as bounds, exact where the
 * counters pin it down: with no failed and no empty call, every failed chain was retried.
 */
export type FirstCallFacts = {
  chains: number;
  firstCallOk: number;
  failedChains: number;
  retries: number;
  /** Calls that failed (bad_args + tool_error + crashed) and calls that were empty, in all. */
  failedCalls: number;
  emptyCalls: number;
  /** Failed chains whose first call was ok with data but retried: at least, at most. */
  retriedOkAtLeast: number;
  retriedAtMost: number;
  /** Every call ok and not empty, yet chains failed: they failed only by being retried. */
  onlyRetried: boolean;
  /** Share of calls whose session was known (where retries can be measured), when reported. */
  knownSessionShare: number | null;
};

export function firstCallFacts(f: CounterFigures): FirstCallFacts {
  const failedChains = Math.max(0, f.first_call_attempts - f.first_call_ok);
  const failedCalls = f.bad_args + f.tool_error + f.crashed;
  return {
    chains: f.first_call_attempts,
    firstCallOk: f.first_call_ok,
    failedChains,
    retries: f.retries,
    failedCalls,
    emptyCalls: f.empty,
    retriedOkAtLeast: Math.max(0, failedChains - failedCalls - f.empty),
    retriedAtMost: Math.min(failedChains, f.retries),
    onlyRetried: failedChains > 0 && failedCalls === 0 && f.empty === 0,
    knownSessionShare: knownSessionShare(f),
  };
}

const n = formatInt;

const SessionLine: FC<{ facts: FirstCallFacts }> = ({ facts }) =>
  facts.knownSessionShare === null ? (
    <li data-why="sessions">
      Retries are measured within a session: a call without a known session (empty <span class="mono">session_id</span>) is a
      chain of one and never a retry.
    </li>
  ) : (
    <li data-why="sessions" data-value={String(facts.knownSessionShare)}>
      <b>{formatRate(facts.knownSessionShare)}</b> of the calls had a known session — only there can a retry be seen; a call
      without one is a chain of one and never a retry.
    </li>
  );

/** The reasons behind a first-call success, opened from the figure's card. */
export const FirstCallWhy: FC<{ facts: FirstCallFacts }> = ({ facts }) => (
  <details class="why" data-why-first-call>
    <summary>
      {n(facts.firstCallOk)} of {countOf(facts.chains, "first call")} · why?
    </summary>
    <ul>
      <li data-why="chains" data-value={String(facts.chains)}>
        <b>{n(facts.chains)}</b> {facts.chains === 1 ? "chain" : "chains"} — a chain is {DEFINITIONS.chain}.
      </li>
      <li data-why="ok" data-value={String(facts.firstCallOk)}>
        <b>{n(facts.firstCallOk)}</b> succeeded at the first call: {DEFINITIONS.first_call_ok}.
      </li>
      {facts.failedChains > 0 ? (
        <li data-why="failed" data-value={String(facts.failedChains)}>
          <b>{n(facts.failedChains)}</b> did not: their first call failed ({countOf(facts.failedCalls, "call")} failed in all), came back
          empty ({countOf(facts.emptyCalls, "empty call")} in all), or was retried (at most {n(facts.retriedAtMost)}).
        </li>
      ) : null}
      {facts.onlyRetried ? (
        <li data-why="only-retried" class="why-key">
          Every call was ok with data, so all {n(facts.failedChains)} failed because their first call was <b>retried</b>: the
          model called the tool again within 30 s with different arguments. By SPEC §2.2 that is a retry even when the first
          answer was fine — a sign the model was not sure what to ask for.
        </li>
      ) : facts.retriedOkAtLeast > 0 ? (
        <li data-why="retried-ok" data-value={String(facts.retriedOkAtLeast)}>
          At least <b>{n(facts.retriedOkAtLeast)}</b> of them were ok with data at the first call and failed only by being retried.
        </li>
      ) : null}
      <li data-why="retries" data-value={String(facts.retries)}>
        <b>{n(facts.retries)}</b> {facts.retries === 1 ? "call was a retry" : "calls were retries"}: {DEFINITIONS.retry}.
      </li>
      <SessionLine facts={facts} />
    </ul>
  </details>
);

/** What a retry count counts, opened from the figure. */
export const RetriesWhy: FC<{ facts: FirstCallFacts }> = ({ facts }) => (
  <details class="why" data-why-retries>
    <summary>{countOf(facts.retries, "retry", "retries")} · what counts?</summary>
    <ul>
      <li>{DEFINITIONS.retry}.</li>
      <li data-why="retried-chains">
        They belong to at most {n(facts.retriedAtMost)} of the {countOf(facts.chains, "chain")} (a chain can be retried more than once).
      </li>
      <SessionLine facts={facts} />
    </ul>
  </details>
);

/** The one-line reason beside a table's first-call cell, when the counters pin one down. */
export function firstCallHint(f: CounterFigures): string | undefined {
  const facts = firstCallFacts(f);
  if (facts.onlyRetried) return "every call was ok with data: the failed first calls were retried (different arguments within 30 s)";
  return undefined;
}
