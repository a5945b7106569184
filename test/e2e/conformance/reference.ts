// The expected read-API answers, computed straight from SPEC §2/§3 over the items as sent, with no
// project code but the retry rule's one definition (src/worker/retry-rule.ts: the window and the gap
// in whole microseconds, which the rollup's SQL is generated from and test/worker/retry-rule.test.ts
// pins to SPEC §2.2's edges): a plain, slow, obviously-correct walk over every call. Where SPEC leaves a choice,
// the reading of docs/metrics.md / docs/read-api.md is used and named in a comment.
import { RETRY_WINDOW_MS, gapMicros, inRetryWindow } from "../../../src/worker/retry-rule.ts";
import { DAY_MS, HOUR_MS, type Call, type Item, type Startup, type StartupTool, type Verdict } from "./workload.ts";

/** SPEC §2.2 gap from c's end to n's start, in whole microseconds (the rule's one definition). */
const gapUsOf = (c: Call, n: Call) => gapMicros({ started_at_ms: c.startedUs / 1000, duration_ms: c.duration_ms }, { started_at_ms: n.startedUs / 1000 });
const WINDOW_US = RETRY_WINDOW_MS * 1000;

/** An item with its receive order and the interval its batch was received in (sent … landed). */
export type Received<T> = T & { seq: number; receivedMs: number; landedMs: number };

export type Figures = {
  calls: number; ok: number; empty: number; bad_args: number; tool_error: number; crashed: number;
  retries: number; first_call_attempts: number; first_call_ok: number; calls_without_session: number;
  /** SDK calls always carry an args_hash: 0 here (OTLP calls without arguments are tested in test/worker/otlp-*). */
  calls_without_args_hash: number;
  first_call_rate: number | null; empty_rate: number | null; error_rate: number | null;
  response_bytes: { sum: number; avg: number | null };
  /** Exact nearest-rank percentiles (SPEC §2.3); the API's must be within tolerance. */
  exact: { p50: number | null; p95: number | null; p99: number | null };
};

type FlaggedCall = Received<Call> & { isRetry: boolean; wasRetried: boolean };

/** Rounds num/den half-up to `decimals`, in exact integer arithmetic (no floating point edge luck). */
export function roundRatio(num: bigint, den: bigint, decimals: number): number {
  const factor = 10n ** BigInt(decimals);
  const scaled = (2n * num * factor + den) / (2n * den);
  return Number(scaled) / Number(factor);
}

function rateOf(n: number, d: number): number | null {
  return d === 0 ? null : roundRatio(BigInt(n), BigInt(d), 4);
}

function nearestRank(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.max(1, Math.ceil((p * sorted.length) / 100));
  return sorted[rank - 1]!;
}

const byStartThenReceive = (a: Received<Call>, b: Received<Call>) => a.startedUs - b.startedUs || a.seq - b.seq;

/** The millisecond a call started in (its hour and day are those of this instant). */
export const startedMs = (c: Call) => Math.floor(c.startedUs / 1000);

/** SPEC §2.2: an empty session_id means no session is known. */
const inASession = (c: { session_id: string }) => c.session_id !== "";

export function dayOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

export class Reference {
  readonly calls: FlaggedCall[];
  readonly startups: Received<Startup>[];
  readonly verdicts: Received<Verdict>[];

  constructor(items: Received<Item>[]) {
    this.startups = items.filter((i): i is Received<Startup> => i.type === "startup");
    this.verdicts = items.filter((i): i is Received<Verdict> => i.type === "agreement");
    const calls = items.filter((i): i is Received<Call> => i.type === "call");
    // §2.2: per session, client and tool, ordered by started_at then receive order; c was retried
    // when the very next call starts 0–30,000 ms after c's end with a different args_hash.
    const flagged = calls.map((c) => ({ ...c, isRetry: false, wasRetried: false }));
    const sequences = new Map<string, FlaggedCall[]>();
    // A call without a session (session_id "") is a sequence of its own: never a retry, never retried.
    for (const c of flagged.filter(inASession)) {
      const key = `${c.session_id}\u0000${c.client_name}\u0000${c.tool_name}`;
      sequences.set(key, [...(sequences.get(key) ?? []), c]);
    }
    for (const seq of sequences.values()) {
      seq.sort(byStartThenReceive);
      for (let i = 0; i + 1 < seq.length; i++) {
        const c = seq[i]!;
        const n = seq[i + 1]!;
        const gapUs = gapUsOf(c, n);
        if (inRetryWindow(gapUs) && n.args_hash !== c.args_hash) {
          c.wasRetried = true;
          n.isRetry = true;
        }
      }
    }
    this.calls = flagged;
  }

  /**
   * Which edge cases this workload exercised, so the test can insist that the runs together covered
   * them (a conformance test that never meets a 30,000 ms gap proves nothing about it).
   */
  coverage(): Set<string> {
    const seen = new Set<string>();
    const sessionless = this.calls.filter((c) => !inASession(c));
    if (sessionless.length > 0) seen.add("calls without a session");
    // Two sessionless calls of one client and tool inside the retry window with other arguments:
    // a retry if they had a session, never one without (SPEC §2.2).
    for (const c of sessionless) {
      if (sessionless.some((n) => n !== c && n.client_name === c.client_name && n.tool_name === c.tool_name && n.args_hash !== c.args_hash &&
        inRetryWindow(gapUsOf(c, n)))) {
        seen.add("sessionless calls that would be a retry in a session");
        break;
      }
    }
    const sequences = new Map<string, FlaggedCall[]>();
    for (const c of this.calls.filter(inASession)) {
      const key = `${c.session_id}\u0000${c.client_name}\u0000${c.tool_name}`;
      sequences.set(key, [...(sequences.get(key) ?? []), c]);
    }
    for (const seq of sequences.values()) {
      seq.sort(byStartThenReceive);
      let chain = 1;
      for (let i = 0; i + 1 < seq.length; i++) {
        const c = seq[i]!;
        const n = seq[i + 1]!;
        const gapUs = gapUsOf(c, n);
        const differs = n.args_hash !== c.args_hash;
        if (gapUs === 0 && differs) seen.add("retry at gap 0");
        if (gapUs === WINDOW_US && differs) seen.add("retry at gap 30,000 ms");
        if (gapUs > WINDOW_US && gapUs <= WINDOW_US + 1_000 && differs) seen.add("no retry just over 30,000 ms");
        if (gapUs < 0 && gapUs >= -1_000 && differs) seen.add("no retry just under gap 0");
        if (inRetryWindow(gapUs) && !differs) seen.add("same-hash repeat in the window");
        if (n.startedUs === c.startedUs) seen.add("tied started_at");
        if (n.isRetry && dayOf(startedMs(n)) !== dayOf(startedMs(c))) seen.add("retry across a UTC midnight");
        chain = n.isRetry ? chain + 1 : 1;
        if (chain >= 3) seen.add("chain of 3+");
      }
    }
    // Two clients in one session: a call of the other client inside the retry window is no retry,
    // and a call of the other client in between does not break a pair (SPEC §2.2, §2.4).
    const bySessionTool = new Map<string, FlaggedCall[]>();
    for (const c of this.calls.filter(inASession)) {
      const key = `${c.session_id}\u0000${c.tool_name}`;
      bySessionTool.set(key, [...(bySessionTool.get(key) ?? []), c]);
    }
    for (const seq of bySessionTool.values()) {
      seq.sort(byStartThenReceive);
      for (let i = 0; i + 1 < seq.length; i++) {
        const c = seq[i]!;
        const n = seq[i + 1]!;
        const gapUs = gapUsOf(c, n);
        if (n.client_name !== c.client_name && inRetryWindow(gapUs) && n.args_hash !== c.args_hash) seen.add("other client's call in the retry window");
      }
    }
    // Conversations of one client interleaved in time (one HTTP server, several people): each
    // session's calls only ever retry their own.
    const spans = new Map<string, { client: string; lo: number; hi: number }>();
    for (const c of this.calls.filter(inASession)) {
      const span = spans.get(c.session_id) ?? { client: c.client_name, lo: c.startedUs, hi: c.startedUs };
      spans.set(c.session_id, { client: span.client, lo: Math.min(span.lo, c.startedUs), hi: Math.max(span.hi, c.startedUs) });
    }
    const spanList = [...spans.values()];
    if (spanList.some((a, i) => spanList.some((b, j) => i < j && a.client === b.client && a.lo <= b.hi && b.lo <= a.hi))) {
      seen.add("interleaved conversations of one client");
    }
    const bySession = new Map<string, FlaggedCall[]>();
    for (const c of this.calls.filter(inASession)) bySession.set(c.session_id, [...(bySession.get(c.session_id) ?? []), c]);
    for (const seq of bySession.values()) {
      seq.sort(byStartThenReceive);
      for (let i = 0; i + 2 < seq.length; i++) {
        if (seq[i]!.client_name === seq[i + 2]!.client_name && seq[i + 1]!.client_name !== seq[i]!.client_name) seen.add("other client's call between a pair");
      }
    }
    const sessionDays = new Map<string, Set<string>>();
    for (const c of this.calls.filter(inASession)) sessionDays.set(c.session_id, (sessionDays.get(c.session_id) ?? new Set()).add(dayOf(startedMs(c))));
    if ([...sessionDays.values()].some((d) => d.size > 1)) seen.add("session crossing a UTC midnight");
    const sessionClients = new Map<string, Set<string>>();
    for (const c of this.calls.filter(inASession)) sessionClients.set(c.session_id, (sessionClients.get(c.session_id) ?? new Set()).add(c.client_name));
    if ([...sessionClients.values()].some((cl) => cl.size > 1)) seen.add("client switch in a session");
    if (this.calls.some((c) => c.duration_ms === 0)) seen.add("duration 0");
    if (this.calls.some((c) => c.duration_ms >= 1_000_000)) seen.add("duration over 1,000 s");
    if (this.calls.some((c) => c.duration_ms === 86_400_000)) seen.add("duration of a whole day");
    if (this.calls.some((c) => c.startedUs % (DAY_MS * 1000) === 0)) seen.add("call on a UTC midnight");
    if (this.calls.some((c) => c.startedUs % (DAY_MS * 1000) === DAY_MS * 1000 - 1)) seen.add("call 1 µs before a UTC midnight");
    const today = dayOf(Date.now());
    if (this.calls.some((c) => dayOf(startedMs(c)) < dayOf(Date.now() - 3 * DAY_MS))) seen.add("calls days old");
    if (this.calls.some((c) => dayOf(startedMs(c)) === today)) seen.add("calls today");
    if (this.calls.some((c) => startedMs(c) > Date.now() - 60_000)) seen.add("call in the future");
    const registered = this.registered();
    const called = new Set(this.calls.map((c) => c.tool_name));
    for (const t of registered.values()) {
      if (called.has(t.name)) continue;
      const flagged = t.policy && (t.policy.requires_authorization || t.policy.requires_verified_identity);
      seen.add(flagged ? "uncalled tool exempt by policy" : "dead tool");
      if (t.policy && !flagged) seen.add("dead tool with an all-false policy");
    }
    if ([...called].some((t) => !registered.has(t))) seen.add("called tool not registered");
    if (new Set(this.startups.map((s) => s.session_id)).size < this.startups.length) seen.add("several startups in a session");
    if (this.startups.some((st) => new Set(st.tools.map((t) => t.name)).size < st.tools.length)) seen.add("a tool listed twice in a startup");
    const callSessions = new Set(this.calls.map((c) => c.session_id));
    if (this.startups.some((st) => !callSessions.has(st.session_id))) seen.add("session without calls");
    const { churn, convergence } = this.descriptions();
    if (churn.length > 0) seen.add("description churn");
    if (convergence.length > 0) seen.add("converged descriptions");
    const { silent, agreement } = this.agreement("0000-00-00", "9999-99-99");
    if (silent.length > 0) seen.add("silent declared field");
    if (agreement.some((a) => a.disagreements > 0 && a.disagreements < a.checks)) seen.add("mixed verdicts");
    return seen;
  }

  /** §2.1–2.3 over a set of calls. A chain counts where its first call is; a retry where it is. */
  static figures(calls: FlaggedCall[]): Figures {
    const count = (f: (c: FlaggedCall) => boolean) => calls.filter(f).length;
    const n = calls.length;
    const ok = count((c) => c.outcome === "ok");
    const empty = count((c) => c.outcome === "ok" && c.is_empty);
    const bad = count((c) => c.outcome === "bad_args");
    const toolError = count((c) => c.outcome === "tool_error");
    const crashed = count((c) => c.outcome === "crashed");
    // Chains: every call that is not a retry starts one (a maximal run of retries follows it).
    const attempts = count((c) => !c.isRetry);
    const firstOk = count((c) => !c.isRetry && c.outcome === "ok" && !c.is_empty && !c.wasRetried);
    const bytes = calls.reduce((s, c) => s + c.response_bytes, 0);
    const durations = calls.map((c) => c.duration_ms).sort((a, b) => a - b);
    return {
      calls: n, ok, empty, bad_args: bad, tool_error: toolError, crashed,
      retries: count((c) => c.isRetry), first_call_attempts: attempts, first_call_ok: firstOk,
      calls_without_session: count((c) => !inASession(c)),
      calls_without_args_hash: count((c) => c.args_hash === ""),
      first_call_rate: rateOf(firstOk, attempts),
      empty_rate: rateOf(empty, n),
      error_rate: rateOf(bad + toolError + crashed, n),
      response_bytes: { sum: bytes, avg: n === 0 ? null : roundRatio(BigInt(bytes), BigInt(n), 1) },
      exact: { p50: nearestRank(durations, 50), p95: nearestRank(durations, 95), p99: nearestRank(durations, 99) },
    };
  }

  /** Calls whose UTC day of started_at is in [from, to] (§2: rows are per hour of the call), filtered. */
  callsIn(from: string, to: string, filters: { client?: string; tool?: string } = {}): FlaggedCall[] {
    return this.calls.filter((c) => {
      const day = dayOf(startedMs(c));
      return day >= from && day <= to && (filters.client === undefined || c.client_name === filters.client) &&
        (filters.tool === undefined || c.tool_name === filters.tool);
    });
  }

  /** The project's most recently received startup (§2.4: its tool list is the registered tools). */
  latestStartup(): Received<Startup> | undefined {
    return [...this.startups].sort((a, b) => b.seq - a.seq)[0];
  }

  registered(): Map<string, StartupTool> {
    return new Map((this.latestStartup()?.tools ?? []).map((t) => [t.name, t]));
  }

  /** `/v1/metrics/tools` rows (§3), keyed by tool. */
  tools(from: string, to: string, filters: { client?: string; tool?: string } = {}) {
    const inRange = this.callsIn(from, to, filters);
    const registered = this.registered();
    const names = new Set(inRange.map((c) => c.tool_name));
    for (const name of registered.keys()) if (filters.tool === undefined || filters.tool === name) names.add(name);
    const rows = new Map<string, Figures & { schema_bytes: number | null; registered: boolean; dead: boolean; policy: unknown }>();
    for (const name of names) {
      const f = Reference.figures(inRange.filter((c) => c.tool_name === name));
      const entry = registered.get(name);
      const policy = entry?.policy && (entry.policy.requires_authorization || entry.policy.requires_verified_identity) ? entry.policy : null;
      rows.set(name, {
        ...f,
        schema_bytes: entry ? entry.schema_bytes : null,
        registered: entry !== undefined,
        // §2.4: registered, no calls in the range and filters, and no policy flag set.
        dead: entry !== undefined && f.calls === 0 && policy === null,
        policy,
      });
    }
    return rows;
  }

  /** `/v1/metrics/clients`: the same figures per client. */
  clients(from: string, to: string, filters: { client?: string; tool?: string } = {}): Map<string, Figures> {
    const inRange = this.callsIn(from, to, filters);
    const rows = new Map<string, Figures>();
    for (const name of new Set(inRange.map((c) => c.client_name))) {
      rows.set(name, Reference.figures(inRange.filter((c) => c.client_name === name)));
    }
    return rows;
  }

  /** §2.4 pairs: A and the very next call of its session and client (any tool); counted on A's day, A's client. */
  pairs(from: string, to: string, filters: { client?: string; tool?: string } = {}): Map<string, number> {
    const bySession = new Map<string, FlaggedCall[]>();
    for (const c of this.calls.filter(inASession)) {
      const key = `${c.session_id}\u0000${c.client_name}`;
      bySession.set(key, [...(bySession.get(key) ?? []), c]);
    }
    const pairs = new Map<string, number>();
    for (const calls of bySession.values()) {
      calls.sort(byStartThenReceive);
      for (let i = 0; i + 1 < calls.length; i++) {
        const a = calls[i]!;
        const b = calls[i + 1]!;
        if (a.tool_name === b.tool_name) continue;
        const day = dayOf(startedMs(a));
        if (day < from || day > to) continue;
        if (filters.client !== undefined && a.client_name !== filters.client) continue;
        if (filters.tool !== undefined && a.tool_name !== filters.tool && b.tool_name !== filters.tool) continue;
        const key = `${a.tool_name} -> ${b.tool_name}`;
        pairs.set(key, (pairs.get(key) ?? 0) + 1);
      }
    }
    return pairs;
  }

  /**
   * `/v1/metrics/sessions` (§2.4). First seen = earliest call start or startup receive time; latest
   * client = the client of the payload with the latest such time (ties: later received, the reading
   * of docs/metrics.md); schema bytes = the session's latest startup's tool list.
   */
  sessions(from: string, to: string, filters: { client?: string } = {}, pricePerMillion = 3) {
    type S = { first: number; lastAt: number; lastSeq: number; client: string; calls: number; bytes: number; schema: number; schemaSeq: number };
    const sessions = new Map<string, S>();
    const touch = (id: string, at: number, seq: number, client: string) => {
      const s = sessions.get(id) ?? { first: at, lastAt: at, lastSeq: seq, client, calls: 0, bytes: 0, schema: 0, schemaSeq: -1 };
      s.first = Math.min(s.first, at);
      if (at > s.lastAt || (at === s.lastAt && seq >= s.lastSeq)) Object.assign(s, { lastAt: at, lastSeq: seq, client });
      sessions.set(id, s);
      return s;
    };
    for (const c of this.calls.filter(inASession)) {
      const s = touch(c.session_id, c.startedUs / 1000, c.seq, c.client_name);
      s.calls++;
      s.bytes += c.response_bytes;
    }
    for (const st of this.startups) {
      const s = touch(st.session_id, st.receivedMs, st.seq, st.client_name);
      if (st.seq > s.schemaSeq) {
        s.schemaSeq = st.seq;
        s.schema = st.tools.reduce((sum, t) => sum + t.schema_bytes, 0);
      }
    }
    const chosen = [...sessions.values()].filter((s) => {
      const day = dayOf(s.first);
      return day >= from && day <= to && (filters.client === undefined || s.client === filters.client);
    });
    const n = chosen.length;
    const calls = chosen.reduce((a, s) => a + s.calls, 0);
    const bytes = chosen.reduce((a, s) => a + s.bytes, 0);
    const schema = chosen.reduce((a, s) => a + s.schema, 0);
    const N = BigInt(n);
    return {
      sessions: n,
      calls_per_session: n === 0 ? null : roundRatio(BigInt(calls), N, 1),
      // Tokens = UTF-16 length ÷ 4, not rounded before summing.
      response_tokens_per_session: n === 0 ? null : roundRatio(BigInt(bytes), 4n * N, 1),
      schema_tokens_per_session: n === 0 ? null : roundRatio(BigInt(schema), 4n * N, 1),
      // cost = (response + schema tokens) × price ÷ 1e6, averaged per session; 6 decimals (docs/read-api.md).
      cost_per_session_usd: n === 0 ? null : roundRatio(BigInt(bytes + schema) * BigInt(pricePerMillion), 4n * N * 1_000_000n, 6),
      // Calls of the range's days without a session, in no session (SPEC §2.4).
      calls_without_session: this.callsIn(from, to, { client: filters.client }).filter((c) => !inASession(c)).length,
      // SPEC §10: sessions exist and none has a tool list (schema size 0): schema cost is not measurable.
      ...(n > 0 && chosen.every((s) => s.schema === 0) ? { not_measurable: ["schema_tokens_per_session", "cost_per_session_usd"] } : {}),
    };
  }

  /** `/v1/metrics/timeseries`: every bucket of the range, keyed by its ISO start. */
  timeseries(from: string, to: string, grain: "day" | "hour", filters: { client?: string; tool?: string } = {}) {
    const step = grain === "day" ? DAY_MS : HOUR_MS;
    const start = Date.parse(`${from}T00:00:00Z`);
    const end = Date.parse(`${to}T00:00:00Z`) + DAY_MS;
    const inRange = this.callsIn(from, to, filters);
    const buckets: { start: string; figures: Figures }[] = [];
    for (let t = start; t < end; t += step) {
      buckets.push({ start: new Date(t).toISOString(), figures: Reference.figures(inRange.filter((c) => startedMs(c) >= t && startedMs(c) < t + step)) });
    }
    return buckets;
  }

  /**
   * §2.5 churn: per (tool, schema_hash), the description hashes seen across all startups (a tool
   * churns when its description changed while its schema did not); convergence: registered tools
   * sharing their latest description_norm (the empty description's norm and a missing norm excluded,
   * docs/read-api.md).
   */
  descriptions(tool?: string) {
    type Seen = { startups: number; firstFrom: number; firstTo: number; lastFrom: number; lastTo: number; lastSeq: number };
    const versions = new Map<string, Map<string, Seen>>();
    for (const st of [...this.startups].sort((a, b) => a.seq - b.seq)) {
      for (const t of st.tools) {
        if (tool !== undefined && t.name !== tool) continue;
        const key = `${t.name}\u0000${t.schema_hash}`;
        const descs = versions.get(key) ?? new Map<string, Seen>();
        const seen = descs.get(t.description_hash) ?? { startups: 0, firstFrom: st.receivedMs, firstTo: st.landedMs, lastFrom: 0, lastTo: 0, lastSeq: -1 };
        // How many startups listed this version (a list naming the tool twice is one startup).
        if (seen.lastSeq !== st.seq) seen.startups++;
        seen.lastSeq = st.seq;
        seen.lastFrom = st.receivedMs;
        seen.lastTo = st.landedMs;
        descs.set(t.description_hash, seen);
        versions.set(key, descs);
      }
    }
    const registered = this.registered();
    const churn = [...versions]
      .filter(([, descs]) => descs.size > 1)
      .map(([key, descs]) => {
        const [tool_name, schema_hash] = key.split("\u0000") as [string, string];
        return {
          tool_name, schema_hash, registered: registered.has(tool_name), description_versions: descs.size,
          descriptions: [...descs].map(([description_hash, seen]) => ({ description_hash, ...seen })).sort((a, b) => a.description_hash.localeCompare(b.description_hash)),
        };
      })
      .sort((a, b) => `${a.tool_name} ${a.schema_hash}`.localeCompare(`${b.tool_name} ${b.schema_hash}`));
    const groups = new Map<string, string[]>();
    for (const t of registered.values()) {
      if (t.description_norm === undefined) continue;
      groups.set(t.description_norm, [...(groups.get(t.description_norm) ?? []), t.name]);
    }
    const convergence = [...groups]
      .filter(([, tools]) => tools.length >= 2 && (tool === undefined || tools.includes(tool)))
      .map(([description_norm, tools]) => ({ description_norm, tools: tools.sort() }))
      .sort((a, b) => a.description_norm.localeCompare(b.description_norm));
    return { churn, convergence };
  }

  /**
   * §2.5 agreement per (field, tool_a, tool_b) with the two names in code-point order whichever order
   * they were sent in, by UTC day of checked_at; silent declared fields.
   */
  agreement(from: string, to: string, tool?: string) {
    const rows = new Map<string, { field: string; tool_a: string; tool_b: string; checks: number; disagreements: number }>();
    for (const v of this.verdicts) {
      const day = dayOf(v.checkedMs);
      if (day < from || day > to) continue;
      if (tool !== undefined && v.tool_a !== tool && v.tool_b !== tool) continue;
      const [toolA, toolB] = codePointCompare(v.tool_a, v.tool_b) <= 0 ? [v.tool_a, v.tool_b] : [v.tool_b, v.tool_a];
      const key = `${v.field}\u0000${toolA}\u0000${toolB}`;
      const row = rows.get(key) ?? { field: v.field, tool_a: toolA, tool_b: toolB, checks: 0, disagreements: 0 };
      row.checks++;
      if (!v.agreed) row.disagreements++;
      rows.set(key, row);
    }
    const declared = new Map<string, Set<string>>();
    for (const st of this.startups) {
      for (const d of st.agree_declared) for (const t of d.tools) declared.set(d.field, (declared.get(d.field) ?? new Set()).add(t));
    }
    const withVerdicts = new Set([...rows.values()].map((r) => r.field));
    const silent = [...declared]
      // With a tool filter: fields declared with that tool and no verdict involving it in the range
      // (our reading; SPEC §2.5 has no filter).
      .filter(([field, tools]) => !withVerdicts.has(field) && (tool === undefined || tools.has(tool)))
      .map(([field, tools]) => ({ field, tools: [...tools].sort() }))
      .sort((a, b) => a.field.localeCompare(b.field));
    const agreement = [...rows.values()]
      .map((r) => ({ ...r, disagreement_rate: rateOf(r.disagreements, r.checks) }))
      .sort((a, b) => `${a.field} ${a.tool_a} ${a.tool_b}`.localeCompare(`${b.field} ${b.tool_a} ${b.tool_b}`));
    return { agreement, silent };
  }
}

/** Unicode code-point order, spelled out: the arrays of code points compared element by element. */
function codePointCompare(a: string, b: string): number {
  const x = Array.from(a, (c) => c.codePointAt(0)!);
  const y = Array.from(b, (c) => c.codePointAt(0)!);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return x.length - y.length;
}
