// `npm run rollup` against a fake worker: /__scheduled only queues the jobs, and the jobs finish
// later — the command must wait for them (each database's as_of in the health answer), trigger the
// cron again when a run stops short of the backlog, and say what it folded in.
import { describe, expect, it } from "vitest";
// @ts-expect-error -- a plain .mjs module of the scripts, without type declarations
import * as rollupLocal from "../../scripts/rollup-local.mjs";

type Health = {
  queue: { backlog_batches: number };
  databases: { name: string; state: "ok" | "unavailable"; rollup_as_of: string | null }[];
  rollup: { projects_behind: { project_id: string; pending_calls: number; pending_startups: number; pending_agreements: number }[] };
};
const r = rollupLocal as {
  caughtUp(h: Health, sinceMs: number): boolean;
  describeRollup(before: Health, after: Health, o: { runs: number; seconds: number }): string;
  runLocalRollup(o: {
    url: string;
    adminToken: string;
    fetch: (url: string, init?: { headers?: Record<string, string> }) => Promise<Response>;
    now: () => number;
    sleep: (ms: number) => Promise<void>;
    timeoutMs?: number;
  }): Promise<{ ok: boolean; message: string }>;
};

const T0 = Date.UTC(2026, 11, 2, 15, 0, 0);
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/**
 * A worker whose rollup jobs finish `jobMs` after the trigger, each folding at most `perRun` calls
 * of a backlog of `pending` (received before T0): as_of is the trigger's time when caught up, else
 * just before the oldest call still waiting — as the rollup writes it.
 */
function fakeWorker(o: { pending: number; perRun: number; jobMs: number; token?: string; scheduled?: boolean; dbState?: "ok" | "unavailable"; backlog?: number }) {
  let clock = T0;
  let pending = o.pending;
  let asOf: number | null = null;
  const jobs: { at: number; time: number }[] = [];
  const triggers: number[] = [];
  const settle = () => {
    for (const job of jobs.filter((j) => j.at <= clock)) {
      pending = Math.max(0, pending - o.perRun);
      asOf = Math.max(asOf ?? 0, pending === 0 ? job.time : T0 - 10_000);
    }
    jobs.splice(0, jobs.length, ...jobs.filter((j) => j.at > clock));
  };
  const health = (): Health => ({
    queue: { backlog_batches: o.backlog ?? 0 },
    databases: ["DB", "DB_2"].map((name) => ({ name, state: o.dbState ?? "ok", rollup_as_of: iso(asOf) })),
    rollup: { projects_behind: pending > 0 ? [{ project_id: "prj_a", pending_calls: pending, pending_startups: 0, pending_agreements: 0 }] : [] },
  });
  const fetch = async (url: string, init?: { headers?: Record<string, string> }) => {
    settle();
    const u = new URL(url);
    if (u.pathname === "/__scheduled") {
      if (o.scheduled === false) return new Response("not found", { status: 404 });
      triggers.push(clock);
      // Queued, not run: the answer comes before the job.
      jobs.push({ at: clock + o.jobMs, time: Number(u.searchParams.get("time")) });
      return new Response("Ran scheduled event");
    }
    if (u.pathname === "/v1/admin/health") {
      if (init?.headers?.authorization !== `Bearer ${o.token ?? "t"}`) return new Response("{}", { status: 401 });
      return Response.json(health());
    }
    return new Response("?", { status: 404 });
  };
  return {
    fetch,
    now: () => clock,
    sleep: async (ms: number) => {
      clock += ms;
    },
    triggers,
    get pending() {
      return pending;
    },
  };
}

const run = (w: ReturnType<typeof fakeWorker>, timeoutMs?: number) =>
  r.runLocalRollup({ url: "http://127.0.0.1:8787", adminToken: "t", fetch: w.fetch, now: w.now, sleep: w.sleep, ...(timeoutMs ? { timeoutMs } : {}) });

describe("npm run rollup", () => {
  it("waits for the jobs the cron queued, not for /__scheduled's answer, and says what they folded in", async () => {
    const w = fakeWorker({ pending: 9, perRun: 100, jobMs: 1_500 });
    const result = await run(w);
    expect(result.ok).toBe(true);
    expect(w.pending).toBe(0);
    expect(w.triggers).toHaveLength(1);
    expect(result.message).toBe("Rollup done in 1.5 s (1 cron run): folded in 9 calls of 1 project; DB, DB_2 complete up to 2026-12-02 15:00:00 UTC.");
  });

  it("triggers the cron again while a run stops short of the backlog (its statement budget), until it is caught up", async () => {
    const w = fakeWorker({ pending: 250, perRun: 100, jobMs: 1_000 });
    const result = await run(w);
    expect(result.ok).toBe(true);
    expect(w.pending).toBe(0);
    expect(w.triggers).toHaveLength(3);
    expect(result.message).toContain("(3 cron runs): folded in 250 calls of 1 project");
  });

  it("nothing waiting: one run, and it says so", async () => {
    const result = await run(fakeWorker({ pending: 0, perRun: 100, jobMs: 200 }));
    expect(result).toEqual({ ok: true, message: expect.stringContaining("(1 cron run): nothing was waiting;") });
  });

  it("gives up at its timeout, saying what still waits, when a database stays unavailable", async () => {
    const w = fakeWorker({ pending: 5, perRun: 100, jobMs: 200, dbState: "unavailable" });
    const result = await run(w, 10_000);
    expect(result.ok).toBe(false);
    expect(result.message).toContain("The rollup has not caught up after 10 s");
    expect(result.message).toContain("DB unavailable");
  });

  it("waits for batches still in the ingest queue", async () => {
    const result = await run(fakeWorker({ pending: 0, perRun: 100, jobMs: 200, backlog: 2 }), 5_000);
    expect(result.ok).toBe(false);
  });

  it("says what is wrong: a worker without /__scheduled, a wrong admin token, nothing listening", async () => {
    expect((await run(fakeWorker({ pending: 1, perRun: 1, jobMs: 1, scheduled: false }))).message).toContain("does not serve /__scheduled: run the worker with `npm run dev`");
    expect((await run(fakeWorker({ pending: 1, perRun: 1, jobMs: 1, token: "other" }))).message).toContain("refused the ADMIN_TOKEN (401)");
    const refused = await r.runLocalRollup({
      url: "http://127.0.0.1:1",
      adminToken: "t",
      fetch: async () => {
        throw new TypeError("fetch failed");
      },
      now: () => 0,
      sleep: async () => undefined,
    });
    expect(refused).toEqual({ ok: false, message: "Cannot reach the worker at http://127.0.0.1:1: start it with `npm run dev` first." });
  });

  it("complete up to T means as_of ≥ T − 1 in every database (a payload received at T itself may wait)", () => {
    const h = (asOfs: (number | null)[]): Health => ({
      queue: { backlog_batches: 0 },
      databases: asOfs.map((a, i) => ({ name: `DB${i}`, state: "ok", rollup_as_of: iso(a) })),
      rollup: { projects_behind: [] },
    });
    expect(r.caughtUp(h([T0, T0]), T0)).toBe(true);
    expect(r.caughtUp(h([T0 - 1, T0]), T0)).toBe(true);
    expect(r.caughtUp(h([T0 - 2, T0]), T0)).toBe(false);
    expect(r.caughtUp(h([null, T0]), T0)).toBe(false);
    expect(r.caughtUp(h([]), T0)).toBe(false);
  });
});
