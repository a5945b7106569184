// The real worker (src/worker/index.ts) with its bindings metered, for `npm run bench:cost`: every
// D1 statement's meta (rows written and read, size after) is added up per phase (the entry point
// that ran it: ingest, rollup, retention) and per statement, the KeyBudget Durable Object's storage
// operations are counted (a SQLite-backed object bills each key put as a row written), and so are
// Analytics Engine data points and Durable Object requests. Nothing else differs from a deploy but
// the clock: an ingest request's `x-bench-received-at` (its simulated receive time) shifts the
// isolate's Date.now to it, so that rows are received when the simulated traffic sends them and the
// rollup runs of the simulated day see them age out of the Idempotency-Key window as they would.
import worker, { KeyBudget as RealKeyBudget } from "../../src/worker/index.ts";
import { RETENTION_CRON } from "../../src/worker/rollup/index.ts";
import type { Env } from "../../src/worker/env.ts";

type Phase = "ingest" | "rollup" | "retention" | "other";
type StatementStats = { phase: Phase; sql: string; runs: number; rows_written: number; rows_read: number };
type PhaseStats = { invocations: number; statements: number; rows_written: number; rows_read: number; longest_batch_ms: number; longest_batch_rows_written: number };

const statements = new Map<string, StatementStats>();
const phases = new Map<Phase, PhaseStats>();
const durable = { requests: 0, rows_written: 0, rows_read: 0 };
let analyticsPoints = 0;
let sizeAfter = 0;
const pending = new Set<Promise<unknown>>();

/** Simulated time = the real clock shifted by the last ingest request's offset (durations stay real). */
const realNow = Date.now.bind(Date);
let clockOffsetMs = 0;
Date.now = () => realNow() + clockOffsetMs;

function phaseStats(phase: Phase): PhaseStats {
  let p = phases.get(phase);
  if (!p) phases.set(phase, (p = { invocations: 0, statements: 0, rows_written: 0, rows_read: 0, longest_batch_ms: 0, longest_batch_rows_written: 0 }));
  return p;
}

function record(phase: Phase, sql: string, meta: D1Meta | undefined): number {
  const written = meta?.rows_written ?? 0;
  const read = meta?.rows_read ?? 0;
  const name = sql.replace(/\s+/g, " ").trim().slice(0, 110);
  const key = `${phase}\u0000${name}`;
  const s = statements.get(key) ?? { phase, sql: name, runs: 0, rows_written: 0, rows_read: 0 };
  s.runs += 1;
  s.rows_written += written;
  s.rows_read += read;
  statements.set(key, s);
  const p = phaseStats(phase);
  p.statements += 1;
  p.rows_written += written;
  p.rows_read += read;
  if (meta?.size_after) sizeAfter = meta.size_after;
  return written;
}

type Metered = { sql: string; inner: D1PreparedStatement };
const innerOf = new WeakMap<object, Metered>();

function meteredStatement(phase: Phase, sql: string, inner: D1PreparedStatement): D1PreparedStatement {
  const stmt = {
    bind: (...values: unknown[]) => meteredStatement(phase, sql, inner.bind(...values)),
    async run() {
      const r = await inner.run();
      record(phase, sql, r.meta);
      return r;
    },
    async all() {
      const r = await inner.all();
      record(phase, sql, r.meta);
      return r;
    },
    // first() returns no meta: run it as all() and take the first row, as first() would.
    async first(column?: string) {
      const r = await inner.all<Record<string, unknown>>();
      record(phase, sql, r.meta);
      const row = r.results[0];
      if (row === undefined) return null;
      return column === undefined ? row : (row[column] ?? null);
    },
    async raw(options?: { columnNames?: boolean }) {
      return inner.raw(options as { columnNames: true });
    },
  } as unknown as D1PreparedStatement;
  innerOf.set(stmt, { sql, inner });
  return stmt;
}

function meteredDb(db: D1Database, phase: Phase): D1Database {
  return {
    prepare: (sql: string) => meteredStatement(phase, sql, db.prepare(sql)),
    async batch(list: D1PreparedStatement[]) {
      const parts = list.map((s) => innerOf.get(s)!);
      const started = Date.now();
      const results = await db.batch(parts.map((p) => p.inner));
      const ms = Date.now() - started;
      let written = 0;
      results.forEach((r, i) => (written += record(phase, parts[i]!.sql, r.meta)));
      const p = phaseStats(phase);
      // One batch is one transaction: the longest one is how long ingest writes queue behind it.
      if (ms > p.longest_batch_ms) p.longest_batch_ms = ms;
      if (written > p.longest_batch_rows_written) p.longest_batch_rows_written = written;
      return results;
    },
    exec: (sql: string) => db.exec(sql),
    withSession: () => {
      throw new Error("bench: withSession is not metered");
    },
    dump: () => db.dump(),
  } as unknown as D1Database;
}

function meteredEnv(env: Env, phase: Phase): Env {
  const ae = env.CALLS_AE;
  return {
    ...env,
    DB: meteredDb(env.DB, phase),
    CALLS_AE: {
      writeDataPoint(point: AnalyticsEngineDataPoint) {
        analyticsPoints += 1;
        ae.writeDataPoint(point);
      },
    } as AnalyticsEngineDataset,
  };
}

function snapshot() {
  return {
    phases: Object.fromEntries(phases),
    statements: [...statements.values()],
    durable,
    analytics_points: analyticsPoints,
    size_after: sizeAfter,
  };
}

export { IngestHealth, SignInThrottle } from "../../src/worker/index.ts";

export default {
  async fetch(request, env, ctx) {
    const path = new URL(request.url).pathname;
    if (path === "/__meter") {
      // Waits for every write still running after its 202 (ingest writes in waitUntil).
      while (pending.size > 0) await Promise.allSettled([...pending]);
      // The Durable Object runs apart from this handler: it keeps its own counts.
      const keyId = new URL(request.url).searchParams.get("key_id");
      const stub = keyId ? (env.KEY_BUDGET.get(env.KEY_BUDGET.idFromName(keyId)) as unknown as { meter(): Promise<typeof durable> }) : null;
      return Response.json({ ...snapshot(), durable: stub ? await stub.meter() : durable });
    }
    const receivedAt = request.headers.get("x-bench-received-at");
    if (receivedAt !== null) clockOffsetMs = Number(receivedAt) - realNow();
    const phase: Phase = path.startsWith("/v1/ingest") ? "ingest" : "other";
    phaseStats(phase).invocations += 1;
    const tracked = {
      waitUntil(promise: Promise<unknown>) {
        const p = promise.finally(() => pending.delete(p));
        pending.add(p);
        ctx.waitUntil(p);
      },
      passThroughOnException: () => ctx.passThroughOnException(),
      props: ctx.props,
    } as ExecutionContext;
    return (worker.fetch as (r: Request, e: Env, c: ExecutionContext) => Response | Promise<Response>)(request, meteredEnv(env, phase), tracked);
  },
  async scheduled(controller, env) {
    const phase: Phase = controller.cron === RETENTION_CRON ? "retention" : "rollup";
    phaseStats(phase).invocations += 1;
    await worker.scheduled(controller, meteredEnv(env, phase));
  },
} satisfies ExportedHandler<Env>;

/** KeyBudget as deployed, with its storage operations counted. */
export class KeyBudget extends RealKeyBudget {
  constructor(ctx: DurableObjectState, env: Cloudflare.Env) {
    const storage = ctx.storage;
    const metered = new Proxy(storage, {
      get(target, prop) {
        if (prop === "put") {
          return (key: string | Record<string, unknown>, ...rest: unknown[]) => {
            durable.rows_written += typeof key === "string" ? 1 : Object.keys(key).length;
            return (target.put as (...a: unknown[]) => Promise<void>).call(target, key, ...rest);
          };
        }
        if (prop === "get") {
          return (key: string | string[], ...rest: unknown[]) => {
            durable.rows_read += Array.isArray(key) ? key.length : 1;
            return (target.get as (...a: unknown[]) => Promise<unknown>).call(target, key, ...rest);
          };
        }
        if (prop === "delete") {
          return (key: string | string[], ...rest: unknown[]) => {
            durable.rows_written += Array.isArray(key) ? key.length : 1;
            return (target.delete as (...a: unknown[]) => Promise<unknown>).call(target, key, ...rest);
          };
        }
        const v = Reflect.get(target, prop, target);
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
    super(ctx, env);
    // The base class checks its argument's type, so the wrapper goes on afterwards.
    const wrapped = new Proxy(ctx, { get: (t, p) => (p === "storage" ? metered : Reflect.get(t, p, t)) });
    Object.defineProperty(this, "ctx", { value: wrapped, configurable: true });
  }

  /** This object's counts (read by the bench through /__meter; not counted itself). */
  async meter() {
    return { ...durable };
  }

  override async take(payloads: number, budgetPerMinute: number, idempotencyKey: string | null = null) {
    durable.requests += 1;
    return super.take(payloads, budgetPerMinute, idempotencyKey);
  }

  // The key check (SPEC §1.1, turn 3) asks this object on every ingest request, and tells it what D1 said at most once a minute.
  override async keyState() {
    durable.requests += 1;
    return super.keyState();
  }

  override async setKeyState(state: Parameters<RealKeyBudget["setKeyState"]>[0]) {
    durable.requests += 1;
    return super.setKeyState(state);
  }
}
