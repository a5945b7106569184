// Per-project rollup lag (src/worker/db/rollup-lag.ts), read by the health route: what each project
// still has waiting and since when; a project with a pathological backlog stays behind on its own
// while the others' requests are taken in turn and drop out of the answer.
import { env } from "cloudflare:test";
import { beforeEach, expect, it } from "vitest";
import { rollupLagByProject } from "../../../src/worker/db/rollup-lag.ts";
import { ROLLUP_FIXED_STATEMENTS, runRollup } from "../../../src/worker/rollup/index.ts";
import { CALL_CHUNK_STATEMENTS } from "../../../src/worker/rollup/calls.ts";
import { call, calls, deliver, resetDb, type TestPayload } from "./fixtures.ts";

const db = env.DB;
const T0 = Date.UTC(2026, 10, 20, 12);
const startup = (project_id: string): TestPayload => ({
  type: "startup",
  startup: { project_id, session_id: "s1", client_name: "claude", tools: [], agree_declared: [] },
});
const verdict = (project_id: string): TestPayload => ({
  type: "agreement",
  agreement: { project_id, session_id: "s1", field: "total", tool_a: "a", tool_b: "b", agreed: true, checked_at_ms: T0, window_ms: 300_000 },
});

beforeEach(() => resetDb(db));

it("answers each project's waiting payloads and their oldest receive time; nothing once caught up", async () => {
  expect(await rollupLagByProject(db, T0)).toEqual({ as_of_ms: null, projects: [] });
  await deliver(db, calls([call({ project_id: "p1", started_at_ms: T0 }), call({ project_id: "p1", started_at_ms: T0 + 1 })]), T0 + 1_000);
  await deliver(db, [...calls([call({ project_id: "p2", started_at_ms: T0 })]), startup("p2"), verdict("p1")], T0 + 2_000);
  await deliver(db, [startup("p3")], T0 + 3_000);

  expect(await rollupLagByProject(db, T0 + 10_000)).toEqual({
    as_of_ms: null,
    projects: [
      { project_id: "p1", pending_requests: 1, pending_calls: 2, pending_startups: 0, pending_agreements: 1, oldest_pending_received_at_ms: T0 + 1_000, lag_ms: 9_000 },
      { project_id: "p2", pending_requests: 1, pending_calls: 1, pending_startups: 1, pending_agreements: 0, oldest_pending_received_at_ms: T0 + 2_000, lag_ms: 8_000 },
      { project_id: "p3", pending_requests: 0, pending_calls: 0, pending_startups: 1, pending_agreements: 0, oldest_pending_received_at_ms: T0 + 3_000, lag_ms: 7_000 },
    ],
  });
  // A clock behind the receive times answers no negative lag.
  expect((await rollupLagByProject(db, T0)).projects.map((p) => p.lag_ms)).toEqual([0, 0, 0]);

  expect((await runRollup(db, T0 + 300_000)).caughtUp).toBe(true);
  expect(await rollupLagByProject(db, T0 + 300_000)).toEqual({ as_of_ms: T0 + 300_000, projects: [] });
});

it("a noisy backlog stays behind on its own: the quiet project's requests are taken in turn", async () => {
  // The noisy project's 6 requests arrive first, then one of the quiet project.
  for (let i = 0; i < 6; i++) {
    await deliver(db, calls(Array.from({ length: 5 }, (_, k) => call({ project_id: "noisy", started_at_ms: T0 + i * 60_000 + k }))), T0 + i);
  }
  await deliver(db, calls([call({ project_id: "quiet", started_at_ms: T0 })]), T0 + 100);
  // One calls chunk of 5 calls a run: the noisy project's first request; then the quiet one's
  // first (the last chunk's leader goes last in a turn), with the noisy project's second.
  const options = { chunkCalls: 5, maxQueries: ROLLUP_FIXED_STATEMENTS + CALL_CHUNK_STATEMENTS };
  await runRollup(db, T0 + 300_000, options);
  expect((await rollupLagByProject(db, T0 + 300_000)).projects.map((p) => p.project_id)).toEqual(["noisy", "quiet"]);
  await runRollup(db, T0 + 600_000, options);
  const lag = await rollupLagByProject(db, T0 + 600_000);
  expect(lag.projects).toMatchObject([{ project_id: "noisy", pending_requests: 4, pending_calls: 20, oldest_pending_received_at_ms: T0 + 2 }]);
  // as_of stays before the noisy project's oldest waiting request (SPEC §2.6).
  expect(lag.as_of_ms).toBe(T0 + 1);
});
