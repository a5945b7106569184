// Evaluation of every alert rule after a rollup run (SPEC §5), from the counter tables, in a number
// of D1 statements that does not grow with the rules; states and the outbox rows they cause are
// written in one transaction.
import {
  allRulesStatement,
  allStatesStatement,
  deadToolStatement,
  eventToolVersionsStatement,
  insertOutboxStatement,
  metricCountersStatement,
  p95HistogramsStatement,
  rulesFromRows,
  statesFromRows,
  spanCountersStatement,
  writeStatesStatement,
  type DeadToolRow,
  type EventToolVersionRow,
  type OutboxWrite,
  type ScopeCountersRow,
  type ScopeHistogramsRow,
  type SpanCountersRow,
  type StateRow,
  type StateWrite,
} from "../db/alerts.ts";
import type { RegisteredToolRow } from "../db/metrics.ts";
import { COUNTER_NAMES, emptyGroup, rate, roundTo, type CounterGroup, type Counters } from "../metrics/counters.ts";
import { findChurn, toolRow } from "../metrics/reports.ts";
import { latestSchemaChange, schemaChangeWindows } from "../metrics/schema-change.ts";
import { REGRESSION_MIN_CALLS, REGRESSION_RATE_DELTA } from "../metrics/schema-regressions.ts";
import { HOUR_MS, hourStartMs } from "../time.ts";
import { metricVerdict } from "./figures.ts";
import { dashboardUrl, type NotificationPayload } from "./notification.ts";
import { EACH, type AlertRule } from "./rules.ts";
import { step, type ScopeState, type Verdict } from "./state-machine.ts";

/** The probe, then the reads batch (rules, states, projects, counters, p95 histograms, dead tools, tool versions). */
export const EVALUATION_READ_STATEMENTS = 1 + 7;
/** Schema regressions need the rollup's sums over spans found from the first reads. */
export const REGRESSION_READ_STATEMENTS = 1;
/** One (states, outbox) pair per chunk of this many scopes; one chunk holds every scope of 1,000 simple rules. */
export const STATES_PER_WRITE_CHUNK = 2_000;
/** Smallest budget an evaluation needs (probe, reads, regression read, one write pair). */
export const MIN_EVALUATION_STATEMENTS = EVALUATION_READ_STATEMENTS + REGRESSION_READ_STATEMENTS + 2;

export type EvaluationOptions = {
  /** D1 statements this evaluation may spend (shared with the rollup: SPEC §5, wrangler.toml). */
  maxStatements: number;
  /** The worker's public origin, for links to the dashboard (`PUBLIC_URL`). */
  publicUrl?: string | undefined;
  /** Names this evaluation's writes (tests pass their own to model an overlapping run). */
  evalId?: string;
};

export type EvaluationReport = {
  statements: number;
  rules: number;
  scopes: number;
  /** Scopes whose state row moved (every evaluated or skipped scope is rewritten). */
  transitions: number;
  notifications: number;
  /** Scopes left for the next run because the statement budget ran out. */
  deferred_scopes: number;
  skipped?: "no_rules" | "budget";
};

type Scope = { tool: string | null; client: string | null };
const scopeKeyOf = (s: Scope) => JSON.stringify([s.tool, s.client]);

type ScopeVerdict = { rule: AlertRule; scope: Scope; verdict: Verdict };

const PROBE_SQL = "SELECT EXISTS (SELECT 1 FROM alert_rules) AS has_rules";

export async function evaluateAlerts(db: D1Database, nowMs: number, options: EvaluationOptions): Promise<EvaluationReport> {
  const report: EvaluationReport = { statements: 0, rules: 0, scopes: 0, transitions: 0, notifications: 0, deferred_scopes: 0 };
  if (options.maxStatements < MIN_EVALUATION_STATEMENTS) return { ...report, skipped: "budget" };
  const probe = await db.prepare(PROBE_SQL).first<{ has_rules: number }>();
  report.statements += 1;
  if (!probe?.has_rules) return { ...report, skipped: "no_rules" };

  const hourMs = hourStartMs(nowMs);
  const [rulesResult, statesResult, projectsResult, countersResult, histogramsResult, deadResult, versionsResult] = await db.batch([
    allRulesStatement(db),
    allStatesStatement(db),
    db.prepare("SELECT project_id, name FROM projects WHERE project_id IN (SELECT project_id FROM alert_rules)"),
    metricCountersStatement(db, hourMs, COUNTER_NAMES),
    p95HistogramsStatement(db, hourMs),
    deadToolStatement(db, hourMs),
    eventToolVersionsStatement(db),
  ]);
  report.statements += 7;
  const rules = rulesFromRows(rulesResult!.results);
  report.rules = rules.length;
  const states = new Map<string, StateRow>();
  for (const s of statesFromRows(statesResult!.results)) states.set(`${s.rule_id}|${s.scope_key}`, s);
  const projectNames = new Map((projectsResult!.results as { project_id: string; name: string }[]).map((p) => [p.project_id, p.name]));

  const verdicts: ScopeVerdict[] = [];
  const statesByRule = groupBy([...states.values()], (s) => s.rule_id);

  // Metric rules: the counters (and p95 histograms) of each scope's window.
  const groups = new Map<string, CounterGroup>();
  const scopeKeysWithRows = new Map<string, string[]>();
  for (const row of countersResult!.results as ScopeCountersRow[]) {
    const group = emptyGroup();
    for (const c of COUNTER_NAMES) group.counters[c] = Number(row[c] ?? 0);
    const scopeKey = scopeKeyOf({ tool: row.scope_tool, client: row.scope_client });
    groups.set(`${row.rule_id}|${scopeKey}`, group);
    const keys = scopeKeysWithRows.get(row.rule_id);
    if (keys) keys.push(scopeKey);
    else scopeKeysWithRows.set(row.rule_id, [scopeKey]);
  }
  for (const row of histogramsResult!.results as ScopeHistogramsRow[]) {
    const group = groups.get(`${row.rule_id}|${scopeKeyOf({ tool: row.scope_tool, client: row.scope_client })}`);
    if (!group || !row.histograms_json) continue;
    for (const part of JSON.parse(`[${row.histograms_json}]`) as Record<string, number>[]) {
      for (const bucket in part) group.histogram[bucket] = (group.histogram[bucket] ?? 0) + (part[bucket] ?? 0);
    }
  }
  for (const rule of rules) {
    if (rule.metric === null || rule.op === null || rule.threshold === null) continue;
    const scopes = scopesOf(rule, scopeKeysWithRows.get(rule.id) ?? [], statesByRule.get(rule.id));
    for (const scope of scopes) {
      const group = groups.get(`${rule.id}|${scopeKeyOf(scope)}`) ?? emptyGroup();
      verdicts.push({ rule, scope, verdict: metricVerdict({ ...rule, metric: rule.metric, op: rule.op, threshold: rule.threshold }, group) });
    }
  }

  // dead_tool: a registered tool with no calls in the window, exactly as the read API's `dead`.
  const deadByRule = groupBy(deadResult!.results as DeadToolRow[], (r) => r.rule_id);
  for (const rule of rules) {
    if (rule.event !== "dead_tool") continue;
    const tools = deadByRule.get(rule.id) ?? [];
    const dead = new Map(tools.map((t) => [t.tool_name, isDead(t)]));
    if (rule.tool === null) {
      const count = [...dead.values()].filter(Boolean).length;
      verdicts.push({ rule, scope: { tool: null, client: rule.client }, verdict: { breaching: count > 0, value: count } });
      continue;
    }
    const names = rule.tool === EACH ? new Set([...dead.keys(), ...knownTools(statesByRule.get(rule.id))]) : new Set([rule.tool]);
    for (const name of names) {
      const row = tools.find((t) => t.tool_name === name);
      verdicts.push({ rule, scope: { tool: name, client: rule.client }, verdict: { breaching: dead.get(name) ?? false, value: row ? Number(row.calls) : null } });
    }
  }

  // description_churn and schema_regression: from tool versions, as /v1/metrics/descriptions and
  // /v1/metrics/schema-regressions find them.
  const versionsByRule = groupBy(versionsResult!.results as EventToolVersionRow[], (r) => r.rule_id);
  const regressionSpans: RegressionCandidate[] = [];
  for (const rule of rules) {
    if (rule.event === "description_churn") verdicts.push(...churnVerdicts(rule, versionsByRule.get(rule.id) ?? [], statesByRule.get(rule.id), nowMs, hourMs));
    if (rule.event === "schema_regression") regressionSpans.push(...regressionCandidates(rule, versionsByRule.get(rule.id) ?? []));
  }
  if (regressionSpans.length > 0 || rules.some((r) => r.event === "schema_regression")) {
    let sums: Counters[] = [];
    if (regressionSpans.length > 0) {
      const spans = regressionSpans.flatMap((c) => [c.before, c.after].map((s) => ({ project: c.rule.project_id, tool: c.tool, client: c.rule.client, ...s })));
      const { results } = await spanCountersStatement(db, JSON.stringify(spans), COUNTER_NAMES).all<SpanCountersRow>();
      report.statements += 1;
      sums = results.sort((a, b) => a.span - b.span).map((r) => {
        const counters = emptyGroup().counters;
        for (const c of COUNTER_NAMES) counters[c] = Number(r[c] ?? 0);
        return counters;
      });
    }
    verdicts.push(...regressionVerdicts(rules, regressionSpans, sums, statesByRule));
  }

  // Steps, then one write batch per chunk of scopes: the least recently evaluated first, so a
  // deferred tail is first in line next time.
  const writes: { state: StateWrite; outbox: OutboxWrite[] }[] = [];
  const evalId = options.evalId ?? crypto.randomUUID();
  for (const { rule, scope, verdict } of verdicts) {
    const scopeKey = scopeKeyOf(scope);
    const previous = states.get(`${rule.id}|${scopeKey}`);
    const { next, notify } = step(previous ? stateOf(previous) : undefined, verdict, rule, nowMs);
    if (!previous || previous.state !== next.state) report.transitions += 1;
    const revision = (previous?.revision ?? 0) + 1;
    const state: StateWrite = {
      rule_id: rule.id, scope_key: scopeKey, project_id: rule.project_id, scope_tool: scope.tool, scope_client: scope.client,
      ...next, expected_revision: previous?.revision ?? 0, eval_id: evalId,
    };
    const outbox: OutboxWrite[] = [];
    if (notify !== null) {
      const payload = payloadOf(rule, scope, notify, verdict.value, projectNames.get(rule.project_id) ?? rule.project_id, hourMs, nowMs, options.publicUrl);
      for (const destination of rule.destinations) {
        outbox.push({ project_id: rule.project_id, rule_id: rule.id, scope_key: scopeKey, destination_id: destination, kind: notify, revision, eval_id: evalId, payload_json: JSON.stringify(payload) });
      }
    }
    writes.push({ state, outbox });
  }
  report.scopes = writes.length;
  writes.sort((a, b) => (states.get(`${a.state.rule_id}|${a.state.scope_key}`)?.last_evaluated_ms ?? 0) - (states.get(`${b.state.rule_id}|${b.state.scope_key}`)?.last_evaluated_ms ?? 0));
  const statements: D1PreparedStatement[] = [];
  let budget = options.maxStatements - report.statements;
  for (let i = 0; i < writes.length; i += STATES_PER_WRITE_CHUNK) {
    if (budget < 2) {
      report.deferred_scopes = writes.length - i;
      break;
    }
    const chunk = writes.slice(i, i + STATES_PER_WRITE_CHUNK);
    const outbox = chunk.flatMap((w) => w.outbox);
    statements.push(writeStatesStatement(db, JSON.stringify(chunk.map((w) => w.state))), insertOutboxStatement(db, JSON.stringify(outbox), nowMs));
    report.notifications += outbox.length;
    budget -= 2;
  }
  if (statements.length > 0) {
    // One batch is one transaction: a state change and the notifications it causes land together.
    await db.batch(statements);
    report.statements += statements.length;
  }
  return report;
}

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const map = new Map<string, T[]>();
  for (const item of items) {
    const list = map.get(key(item));
    if (list) list.push(item);
    else map.set(key(item), [item]);
  }
  return map;
}

function stateOf(row: StateRow): ScopeState {
  const { state, breaches, since_ms, value, last_evaluated_ms, last_notified_ms } = row;
  return { state, breaches, since_ms, value, last_evaluated_ms, last_notified_ms };
}

/**
 * The scopes a rule is evaluated on: its one scope when it does not split, else every scope with
 * rows in the window and every scope it already has a state for (so a tool whose calls stopped is
 * still evaluated — with 0 calls — and can breach `calls < n` or resolve).
 */
function scopesOf(rule: AlertRule, keysWithRows: string[], states: StateRow[] | undefined): Scope[] {
  const fixedTool = rule.tool === EACH ? undefined : rule.tool;
  const fixedClient = rule.client === EACH ? undefined : rule.client;
  if (fixedTool !== undefined && fixedClient !== undefined) return [{ tool: fixedTool, client: fixedClient }];
  const keys = new Set([...keysWithRows, ...(states ?? []).map((s) => s.scope_key)]);
  return [...keys].map((k) => {
    const [tool, client] = JSON.parse(k) as [string | null, string | null];
    return { tool, client };
  });
}

function knownTools(states: StateRow[] | undefined): string[] {
  return (states ?? []).flatMap((s) => (s.scope_tool === null ? [] : [s.scope_tool]));
}

function isDead(t: DeadToolRow): boolean {
  const registered: RegisteredToolRow = { ...t, requires_authorization: Number(t.requires_authorization), requires_verified_identity: Number(t.requires_verified_identity) };
  const group = emptyGroup();
  group.counters.calls = Number(t.calls);
  return toolRow(t.tool_name, group, registered).dead;
}

/**
 * description_churn breaches for a registered tool whose current schema has had two or more
 * descriptions (SPEC §2.5, /v1/metrics/descriptions) and whose newest description was first seen in
 * the window: a change is news for window_hours, then the state resolves.
 */
function churnVerdicts(rule: AlertRule, versions: EventToolVersionRow[], states: StateRow[] | undefined, nowMs: number, hourMs: number): ScopeVerdict[] {
  const registered = new Map<string, string | null>();
  for (const v of versions) if (v.registered) registered.set(v.tool_name, v.current_schema_hash);
  const windowStartMs = hourMs - (rule.window_hours - 1) * HOUR_MS;
  // Descriptions of each registered tool's current schema (the value, in the window or not) and the
  // tools whose newest one is news (the breach).
  const descriptions = new Map<string, number>();
  const churned = new Set<string>();
  for (const entry of findChurn(versions, new Set(registered.keys()))) {
    if (!entry.registered || registered.get(entry.tool_name) !== entry.schema_hash) continue;
    descriptions.set(entry.tool_name, entry.description_versions);
    const newest = Math.max(...entry.descriptions.map((d) => Date.parse(d.first_seen)));
    if (newest >= windowStartMs && newest <= nowMs + HOUR_MS) churned.add(entry.tool_name);
  }
  if (rule.tool === null) return [{ rule, scope: { tool: null, client: null }, verdict: { breaching: churned.size > 0, value: churned.size } }];
  const names = rule.tool === EACH ? new Set([...registered.keys(), ...knownTools(states)]) : new Set([rule.tool]);
  return [...names].map((name) => ({
    rule,
    scope: { tool: name, client: null },
    verdict: { breaching: churned.has(name), value: descriptions.get(name) ?? (registered.has(name) ? 1 : null) },
  }));
}

type Span = { start: number; end: number };
type RegressionCandidate = { rule: AlertRule; tool: string; before: Span; after: Span };

/** Registered tools in scope whose schema changed, with the spans /v1/metrics/schema-regressions compares. */
function regressionCandidates(rule: AlertRule, versions: EventToolVersionRow[]): RegressionCandidate[] {
  const byTool = groupBy(versions, (v) => v.tool_name);
  const candidates: RegressionCandidate[] = [];
  for (const [tool, list] of byTool) {
    const current = list[0]!.current_schema_hash;
    if (!list[0]!.registered || current === null) continue;
    const found = latestSchemaChange(current, list);
    if (!found) continue;
    const { before, after } = schemaChangeWindows(found.changedAtMs);
    candidates.push({ rule, tool, before: { start: before.startMs, end: before.endMs }, after: { start: after.startMs, end: after.endMs } });
  }
  return candidates;
}

/**
 * `regressed` as /v1/metrics/schema-regressions computes it (rates rounded as the read API rounds
 * them); a test checks the two agree.
 */
function regressionVerdicts(rules: AlertRule[], candidates: RegressionCandidate[], sums: Counters[], statesByRule: Map<string, StateRow[]>): ScopeVerdict[] {
  const change = (after: number | null, before: number | null) => (after === null || before === null ? null : roundTo(after - before, 4));
  const found = new Map<string, { regressed: boolean; value: number | null }>();
  candidates.forEach((c, i) => {
    const before = sums[2 * i];
    const after = sums[2 * i + 1];
    if (!before || !after) return;
    const badArgs = change(rate(after.bad_args, after.calls), rate(before.bad_args, before.calls));
    const firstCall = change(rate(after.first_call_ok, after.first_call_attempts), rate(before.first_call_ok, before.first_call_attempts));
    const enough = before.calls >= REGRESSION_MIN_CALLS && after.calls >= REGRESSION_MIN_CALLS;
    const regressed = enough && ((badArgs !== null && badArgs >= REGRESSION_RATE_DELTA) || (firstCall !== null && firstCall <= -REGRESSION_RATE_DELTA));
    found.set(`${c.rule.id}|${c.tool}`, { regressed, value: badArgs });
  });
  const verdicts: ScopeVerdict[] = [];
  for (const rule of rules) {
    if (rule.event !== "schema_regression") continue;
    const mine = [...found.entries()].filter(([k]) => k.startsWith(`${rule.id}|`)).map(([k, v]) => [k.slice(rule.id.length + 1), v] as const);
    if (rule.tool === null) {
      const regressed = mine.filter(([, v]) => v.regressed).length;
      verdicts.push({ rule, scope: { tool: null, client: rule.client }, verdict: { breaching: regressed > 0, value: regressed } });
      continue;
    }
    const names = rule.tool === EACH ? new Set([...mine.map(([t]) => t), ...knownTools(statesByRule.get(rule.id))]) : new Set([rule.tool]);
    const byTool = new Map(mine);
    for (const name of names) {
      const v = byTool.get(name);
      verdicts.push({ rule, scope: { tool: name, client: rule.client }, verdict: { breaching: v?.regressed ?? false, value: v?.value ?? null } });
    }
  }
  return verdicts;
}

function payloadOf(
  rule: AlertRule,
  scope: Scope,
  kind: "firing" | "resolved" | "reminder",
  value: number | null,
  projectName: string,
  hourMs: number,
  nowMs: number,
  publicUrl: string | undefined,
): NotificationPayload {
  const windowed = rule.event !== "schema_regression";
  return {
    kind,
    project: { id: rule.project_id, name: projectName },
    rule: { id: rule.id, name: rule.name },
    scope,
    state: kind === "resolved" ? "ok" : "firing",
    metric: rule.metric ?? rule.event,
    op: rule.op,
    value,
    threshold: rule.threshold,
    window: windowed
      ? { hours: rule.window_hours, from: new Date(hourMs - (rule.window_hours - 1) * HOUR_MS).toISOString(), to: new Date(hourMs + HOUR_MS).toISOString() }
      : null,
    at: new Date(nowMs).toISOString(),
    url: dashboardUrl(publicUrl, scope),
  };
}
