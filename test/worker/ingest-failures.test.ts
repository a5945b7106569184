// The write path's failures (SPEC §1.1, issue 3): a failed D1 write is retried once and logged as
// structured JSON with the project and counts, never the payloads; the 202 is sent regardless;
// an Analytics Engine failure never affects D1.
import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { agreementPayload, callPayload, postIngest, startupPayload, storedRows } from "./helpers/ingest.ts";
import { createProject } from "./helpers/projects.ts";

/** env.DB whose batch() rejects the first `failures` times, counting every attempt. */
function flakyDb(failures: number) {
  const state = { attempts: 0 };
  const db = new Proxy(env.DB, {
    get(target, prop) {
      if (prop === "batch") {
        return async (statements: D1PreparedStatement[]) => {
          state.attempts++;
          if (state.attempts <= failures) throw new Error("D1_ERROR: simulated outage while writing SECRET_TOOL");
          return target.batch(statements);
        };
      }
      const value = Reflect.get(target, prop);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { db, state };
}

const batch = [
  callPayload({ tool_name: "SECRET_TOOL", client_name: "SECRET_CLIENT" }),
  callPayload({ tool_name: "SECRET_TOOL" }),
  startupPayload(),
  agreementPayload(),
];

function logLines(spy: ReturnType<typeof vi.spyOn>): Record<string, unknown>[] {
  return spy.mock.calls.map((args: unknown[]) => JSON.parse(String(args[0])) as Record<string, unknown>);
}

afterEach(() => vi.restoreAllMocks());

describe("D1 write failures", () => {
  it("retries a failed write once, stores the batch once, and logs the retry without payloads", async () => {
    const p = await createProject();
    const { db, state } = flakyDb(1);
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const res = await postIngest({ batch }, { key: p.ingest_key, env: { ...env, DB: db } });
    expect(res.status).toBe(202);
    expect(state.attempts).toBe(2);
    const rows = await storedRows(p.project_id);
    expect(rows.calls).toHaveLength(2);
    expect(rows.startups).toHaveLength(1);
    expect(rows.agreements).toHaveLength(1);
    expect(logLines(errors)).toEqual([
      { event: "ingest_write_retry", project_id: p.project_id, attempt: 1, error: "Error", calls: 2, startups: 1, agreements: 1 },
    ]);
    expect(JSON.stringify(errors.mock.calls)).not.toContain("SECRET");
  });

  it("gives up after the retry: still 202, nothing stored, a final structured log line", async () => {
    const p = await createProject();
    const { db, state } = flakyDb(2);
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const res = await postIngest({ batch }, { key: p.ingest_key, env: { ...env, DB: db } });
    expect(res.status).toBe(202);
    expect(await res.text()).toBe("");
    expect(state.attempts).toBe(2);
    const rows = await storedRows(p.project_id);
    expect(rows.calls).toHaveLength(0);
    expect(rows.sessions).toHaveLength(0);
    expect(logLines(errors).map((l) => [l.event, l.attempt, l.calls])).toEqual([
      ["ingest_write_retry", 1, 2],
      ["ingest_write_failed", 2, 2],
    ]);
    expect(JSON.stringify(errors.mock.calls)).not.toContain("SECRET");
  });

  it("stores the D1 rows when the Analytics Engine binding throws", async () => {
    const p = await createProject();
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const brokenAe = { writeDataPoint() { throw new Error("AE down"); } } as AnalyticsEngineDataset;
    const res = await postIngest({ batch }, { key: p.ingest_key, env: { ...env, CALLS_AE: brokenAe } });
    expect(res.status).toBe(202);
    expect((await storedRows(p.project_id)).calls).toHaveLength(2);
    expect(logLines(errors)).toEqual([{ event: "analytics_write_failed", project_id: p.project_id, calls: 2, error: "Error" }]);
  });

  it("admits the batch (and logs) when the budget object cannot answer", async () => {
    const p = await createProject();
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const brokenBudget = { idFromName: () => { throw new Error("DO down"); } } as unknown as typeof env.KEY_BUDGET;
    const res = await postIngest({ batch }, { key: p.ingest_key, env: { ...env, KEY_BUDGET: brokenBudget } });
    expect(res.status).toBe(202);
    expect((await storedRows(p.project_id)).calls).toHaveLength(2);
    expect(logLines(errors)[0]).toMatchObject({ event: "budget_unavailable", items: 4 });
  });
});
