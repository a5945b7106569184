// Faults injected at the bindings (STYLE.md): a D1 that fails on demand and a queue that records or
// refuses what is sent, passed in place of env.DB / env.INGEST_QUEUE so the production path runs unchanged.
import { env } from "cloudflare:test";

export type FailingD1 = {
  db: D1Database;
  /** Every statement and batch fails while this is true. */
  failing: boolean;
  /** Fail only the next `n` batch() calls (then behave), counted in `batches`. */
  failNextBatches: number;
  batches: number;
  statements: number;
};

const TARGET = Symbol.for("failing-d1-target");
const outage = () => new Error("D1_ERROR: Network connection lost (simulated outage)");

/** env.DB (or `inner`) that fails every statement and batch while `failing` is set. */
export function failingD1(inner: D1Database = env.DB): FailingD1 {
  const state: FailingD1 = { db: undefined as unknown as D1Database, failing: false, failNextBatches: 0, batches: 0, statements: 0 };
  const wrapStatement = (stmt: D1PreparedStatement): D1PreparedStatement =>
    new Proxy(stmt, {
      get(target, prop) {
        if (prop === TARGET) return target;
        if (prop === "bind") return (...values: unknown[]) => wrapStatement(target.bind(...values));
        if (prop === "first" || prop === "all" || prop === "run" || prop === "raw") {
          return async (...args: unknown[]) => {
            state.statements++;
            if (state.failing) throw outage();
            return (target[prop] as (...a: unknown[]) => unknown).apply(target, args);
          };
        }
        const value = Reflect.get(target, prop, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  state.db = new Proxy(inner, {
    get(target, prop) {
      if (prop === "prepare") {
        return (sql: string) => {
          return wrapStatement(target.prepare(sql));
        };
      }
      if (prop === "batch") {
        return async (statements: D1PreparedStatement[]) => {
          state.batches++;
          if (state.failing) throw outage();
          if (state.failNextBatches > 0) {
            state.failNextBatches--;
            throw outage();
          }
          // Bound statements are proxies of the real ones: D1 batches only its own statement objects.
          return target.batch(statements.map((s) => realStatement(s)));
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return state;
}

/** The real statement behind a proxy made by failingD1 (bind() keeps the proxy's target). */
function realStatement(stmt: D1PreparedStatement): D1PreparedStatement {
  const target = (stmt as unknown as { [TARGET]?: D1PreparedStatement })[TARGET];
  return target ?? stmt;
}

export type CapturedQueue = { queue: Queue<unknown>; sent: unknown[]; refuse: boolean };

/** A queue binding that records every message body, or refuses every send while `refuse` is set. */
export function capturingQueue(): CapturedQueue {
  const state: CapturedQueue = { queue: undefined as unknown as Queue<unknown>, sent: [], refuse: false };
  state.queue = {
    async send(body: unknown) {
      if (state.refuse) throw new Error("queue unavailable (simulated)");
      state.sent.push(structuredClone(body));
    },
    async sendBatch(messages: Iterable<MessageSendRequest<unknown>>) {
      if (state.refuse) throw new Error("queue unavailable (simulated)");
      for (const m of messages) state.sent.push(structuredClone(m.body));
    },
  } as unknown as Queue<unknown>;
  return state;
}
