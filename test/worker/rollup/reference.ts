// A plain in-memory computation of every rollup table from ALL payloads at once, written from
// SPEC §2 (docs/spec.md) word for word (chains are walked explicitly, not derived from per-call flags), to
// compare the incremental SQL rollup against. Deliberately straightforward and slow.
import { durationBucket } from "../../../src/worker/histogram.ts";
import { COUNTER_NAMES } from "../../../src/worker/metrics/counters.ts";
import { isRetryOf } from "../../../src/worker/retry-rule.ts";
import type { CounterRow, RollupSnapshot, TestAgreement, TestCall, TestStartup } from "./fixtures.ts";

const HOUR = 3_600_000;
const DAY = 86_400_000;

/** A payload as received: `seq` is its receive order, `received_at_ms` its batch's receive time. */
export interface Received<T> {
  seq: number;
  received_at_ms: number;
  item: T;
}

type Key = string;
const key = (...parts: (string | number)[]): Key => JSON.stringify(parts);

function emptyCounters(): Omit<CounterRow, "project_id" | "start_ms" | "tool_name" | "client_name"> {
  return {
    calls: 0, ok: 0, empty: 0, bad_args: 0, tool_error: 0, crashed: 0, response_bytes_sum: 0, duration_ms_sum: 0,
    retries: 0, first_call_attempts: 0, first_call_ok: 0, calls_without_session: 0, calls_without_args_hash: 0, histogram: {},
  };
}

function groupBy<T>(items: T[], k: (t: T) => Key): Map<Key, T[]> {
  const m = new Map<Key, T[]>();
  for (const t of items) {
    const kk = k(t);
    const list = m.get(kk);
    if (list) list.push(t);
    else m.set(kk, [t]);
  }
  return m;
}

/** SPEC §2.2/§2.4 order: started_at, ties by the order the ingest received them. */
const byStartThenReceipt = (a: Received<TestCall>, b: Received<TestCall>) =>
  a.item.started_at_ms - b.item.started_at_ms || a.seq - b.seq;

export function referenceRollup(
  calls: Received<TestCall>[],
  startups: Received<TestStartup>[],
  agreements: Received<TestAgreement>[],
): RollupSnapshot {
  // --- §2.1–2.3 counters per (project, hour, tool, client) ---------------------------------
  const hours = new Map<Key, CounterRow>();
  const row = (c: TestCall): CounterRow => {
    const hour = Math.floor(c.started_at_ms / HOUR) * HOUR;
    const k = key(c.project_id, hour, c.tool_name, c.client_name);
    let r = hours.get(k);
    if (!r) {
      r = { project_id: c.project_id, start_ms: hour, tool_name: c.tool_name, client_name: c.client_name, ...emptyCounters() };
      hours.set(k, r);
    }
    return r;
  };
  for (const { item: c } of calls) {
    const r = row(c);
    r.calls += 1;
    if (c.outcome === "ok") r.ok += 1;
    if (c.outcome === "ok" && c.is_empty) r.empty += 1;
    if (c.outcome === "bad_args") r.bad_args += 1;
    if (c.outcome === "tool_error") r.tool_error += 1;
    if (c.outcome === "crashed") r.crashed += 1;
    r.response_bytes_sum += c.response_bytes;
    r.duration_ms_sum += c.duration_ms;
    // SPEC §10: an OTLP call whose arguments were not recorded.
    if (c.args_hash === "") r.calls_without_args_hash += 1;
    const b = String(durationBucket(c.duration_ms));
    r.histogram[b] = (r.histogram[b] ?? 0) + 1;
  }

  // §2.2: a call with an empty session_id (no session known) is a sequence of its own: a chain of
  // one, never a retry and never retried, in no session and no pair.
  const withoutSession = (r: Received<TestCall>) => r.item.session_id === "";
  for (const { item: c } of calls.filter(withoutSession)) {
    const r = row(c);
    r.calls_without_session += 1;
    r.first_call_attempts += 1;
    if (c.outcome === "ok" && !c.is_empty) r.first_call_ok += 1;
  }
  const inSessions = calls.filter((r) => !withoutSession(r));

  // §2.2: per (session, client, tool) sequence; n is the next call; gap = n.start − (c.start + c.duration),
  // in whole microseconds (isRetryOf).
  const sequences = groupBy(inSessions, (r) => key(r.item.project_id, r.item.session_id, r.item.client_name, r.item.tool_name));
  for (const seq of sequences.values()) {
    seq.sort(byStartThenReceipt);
    // The gap and the window are the one definition of the rule (retry-rule.ts), shared with the
    // SQL and with the end-to-end reference; the chains are walked here, not derived from flags.
    const retried = (i: number): boolean => {
      const n = seq[i + 1]?.item;
      return n !== undefined && isRetryOf(seq[i]!.item, n);
    };
    // Walk chains: a chain is a maximal run where each call is a retry of the one before.
    let i = 0;
    while (i < seq.length) {
      const first = seq[i]!.item;
      const chainRow = row(first); // a chain counts in the hour and client of its first call
      chainRow.first_call_attempts += 1;
      if (first.outcome === "ok" && !first.is_empty && !retried(i)) chainRow.first_call_ok += 1;
      let j = i;
      while (retried(j)) {
        j += 1;
        row(seq[j]!.item).retries += 1; // a retry counts in the hour and client of the retry call
      }
      i = j + 1;
    }
  }

  const hourRows = [...hours.values()].sort(compareCounterRows);

  // Days: the sum of the day's hour rows — what the database keeps them equal to (migration 0013's
  // triggers), so a day row that drifts from its hours differs from this.
  const days = new Map<Key, CounterRow>();
  for (const h of hourRows) {
    const day = Math.floor(h.start_ms / DAY) * DAY;
    const k = key(h.project_id, day, h.tool_name, h.client_name);
    let d = days.get(k);
    if (!d) {
      d = { project_id: h.project_id, start_ms: day, tool_name: h.tool_name, client_name: h.client_name, ...emptyCounters() };
      days.set(k, d);
    }
    for (const f of COUNTER_NAMES) d[f] += h[f];
    for (const [b, n] of Object.entries(h.histogram)) d.histogram[b] = (d.histogram[b] ?? 0) + n;
  }

  // --- §2.4 pairs: B is the very next call of the session and client; counted on A's day and client
  const pairs = new Map<Key, RollupSnapshot["pairs"][number]>();
  for (const seq of groupBy(inSessions, (r) => key(r.item.project_id, r.item.session_id, r.item.client_name)).values()) {
    seq.sort(byStartThenReceipt);
    for (let i = 0; i + 1 < seq.length; i++) {
      const a = seq[i]!.item;
      const b = seq[i + 1]!.item;
      if (a.tool_name === b.tool_name) continue;
      const day = Math.floor(a.started_at_ms / DAY) * DAY;
      const k = key(a.project_id, day, a.client_name, a.tool_name, b.tool_name);
      const p = pairs.get(k) ?? { project_id: a.project_id, day_start_ms: day, client_name: a.client_name, from_tool: a.tool_name, to_tool: b.tool_name, pair_count: 0 };
      p.pair_count += 1;
      pairs.set(k, p);
    }
  }

  // --- §2.4 sessions: calls, response bytes, schema bytes of the latest startup -----------------
  const sessions = new Map<Key, RollupSnapshot["sessions"][number]>();
  const session = (project_id: string, session_id: string) => {
    const k = key(project_id, session_id);
    let s = sessions.get(k);
    if (!s) {
      s = { project_id, session_id, first_seen_ms: Infinity, last_seen_ms: -Infinity, client_name: "", calls: 0, response_bytes_sum: 0, schema_bytes_sum: 0 };
      sessions.set(k, s);
    }
    return s;
  };
  // First/last seen over the calls' starts and the startups' receive times; the client of the
  // latest (a tie goes to the later received: by receive time, then receive order within a kind).
  const latest = new Map<Key, [number, number, number]>();
  const seen = (project_id: string, session_id: string, atMs: number, receivedAtMs: number, seq: number, client: string) => {
    const s = session(project_id, session_id);
    s.first_seen_ms = Math.min(s.first_seen_ms, atMs);
    s.last_seen_ms = Math.max(s.last_seen_ms, atMs);
    const k = key(project_id, session_id);
    const l = latest.get(k);
    if (!l || atMs > l[0] || (atMs === l[0] && (receivedAtMs > l[1] || (receivedAtMs === l[1] && seq >= l[2])))) {
      latest.set(k, [atMs, receivedAtMs, seq]);
      s.client_name = client;
    }
  };
  for (const { item: c, seq, received_at_ms } of inSessions) {
    const s = session(c.project_id, c.session_id);
    s.calls += 1;
    s.response_bytes_sum += c.response_bytes;
    seen(c.project_id, c.session_id, c.started_at_ms, received_at_ms, seq, c.client_name);
  }
  for (const { item: st, seq, received_at_ms } of startups) seen(st.project_id, st.session_id, received_at_ms, received_at_ms, seq, st.client_name);
  for (const list of groupBy(startups, (r) => key(r.item.project_id, r.item.session_id)).values()) {
    const latest = list.reduce((a, b) => (b.seq > a.seq ? b : a));
    session(latest.item.project_id, latest.item.session_id).schema_bytes_sum = latest.item.tools.reduce((a, t) => a + t.schema_bytes, 0);
  }

  // --- §2.4 registered tools: the project's most recently received startup ----------------------
  const registered: Record<string, unknown>[] = [];
  for (const list of groupBy(startups, (r) => r.item.project_id).values()) {
    const latest = list.reduce((a, b) => (b.seq > a.seq ? b : a));
    const byName = new Map<string, Record<string, unknown>>();
    for (const t of latest.item.tools) {
      byName.set(t.name, {
        project_id: latest.item.project_id, tool_name: t.name, schema_bytes: t.schema_bytes, schema_hash: t.schema_hash,
        description_hash: t.description_hash, description_norm: t.description_norm,
        requires_authorization: t.policy?.requires_authorization ? 1 : 0,
        requires_verified_identity: t.policy?.requires_verified_identity ? 1 : 0,
      });
    }
    registered.push(...byName.values());
  }

  // --- §2.5 tool versions, agreement verdicts and declarations -----------------------------------
  const versions = new Map<Key, Record<string, unknown> & { seqs: Set<number>; latestSeq: number }>();
  for (const s of startups) {
    for (const t of s.item.tools) {
      const sh = t.schema_hash ?? "";
      const dh = t.description_hash ?? "";
      const k = key(s.item.project_id, t.name, sh, dh);
      const v = versions.get(k) ?? {
        project_id: s.item.project_id, tool_name: t.name, schema_hash: sh, description_hash: dh, description_norm: null,
        first_seen_ms: Infinity, last_seen_ms: -Infinity, startups: 0, seqs: new Set<number>(), latestSeq: -1,
      };
      v.first_seen_ms = Math.min(v.first_seen_ms as number, s.received_at_ms);
      v.last_seen_ms = Math.max(v.last_seen_ms as number, s.received_at_ms);
      v.seqs.add(s.seq);
      v.startups = v.seqs.size;
      if (s.seq >= v.latestSeq) {
        v.latestSeq = s.seq;
        v.description_norm = t.description_norm;
      }
      versions.set(k, v);
    }
  }

  const agreementDays = new Map<Key, Record<string, unknown> & { checks: number; disagreements: number }>();
  for (const { item: a } of agreements) {
    const day = Math.floor(a.checked_at_ms / DAY) * DAY;
    const k = key(a.project_id, day, a.field, a.tool_a, a.tool_b);
    const d = agreementDays.get(k) ?? { project_id: a.project_id, day_start_ms: day, field: a.field, tool_a: a.tool_a, tool_b: a.tool_b, checks: 0, disagreements: 0 };
    d.checks += 1;
    if (!a.agreed) d.disagreements += 1;
    agreementDays.set(k, d);
  }

  const declarations = new Map<Key, Record<string, unknown> & { last_declared_ms: number }>();
  for (const s of startups) {
    for (const d of s.item.agree_declared) {
      for (const tool of d.tools) {
        const k = key(s.item.project_id, d.field, tool);
        const dec = declarations.get(k) ?? { project_id: s.item.project_id, field: d.field, tool_name: tool, last_declared_ms: -Infinity };
        dec.last_declared_ms = Math.max(dec.last_declared_ms, s.received_at_ms);
        declarations.set(k, dec);
      }
    }
  }

  const sortBy = <T extends Record<string, unknown>>(rows: T[], cols: string[]) =>
    rows.sort((a, b) => {
      for (const c of cols) {
        const x = a[c] as string | number;
        const y = b[c] as string | number;
        if (x < y) return -1;
        if (x > y) return 1;
      }
      return 0;
    });

  return {
    hours: hourRows,
    days: [...days.values()].sort(compareCounterRows),
    pairs: sortBy([...pairs.values()], ["project_id", "day_start_ms", "client_name", "from_tool", "to_tool"]),
    sessions: sortBy([...sessions.values()], ["project_id", "session_id"]),
    registered: sortBy(registered, ["project_id", "tool_name"]),
    versions: sortBy(
      [...versions.values()].map(({ seqs: _s, latestSeq: _l, ...v }) => v),
      ["project_id", "tool_name", "schema_hash", "description_hash"],
    ),
    agreementDays: sortBy([...agreementDays.values()], ["project_id", "day_start_ms", "field", "tool_a", "tool_b"]),
    declarations: sortBy([...declarations.values()], ["project_id", "field", "tool_name"]),
  };
}

function compareCounterRows(a: CounterRow, b: CounterRow): number {
  if (a.project_id !== b.project_id) return a.project_id < b.project_id ? -1 : 1;
  if (a.start_ms !== b.start_ms) return a.start_ms - b.start_ms;
  if (a.tool_name !== b.tool_name) return a.tool_name < b.tool_name ? -1 : 1;
  if (a.client_name !== b.client_name) return a.client_name < b.client_name ? -1 : 1;
  return 0;
}
