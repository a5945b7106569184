// `call_state.latest_per_tool_json` (migration 0032; keyed by tool since): after any sequence of
// appends, in time order or not, every row names for each of its tools the positions of its latest
// call and of the one before, as its calls say; a row still in the plain-array form is rewritten
// keyed on its next append; and the figures equal a rollup of the same calls in one go.
import { env } from "cloudflare:test";
import { beforeEach, describe, expect, it } from "vitest";
import { runRollup } from "../../../src/worker/rollup/index.ts";
import { call, calls, deliver, resetDb, snapshot, type TestCall } from "./fixtures.ts";

const db = env.DB;
const HOUR = 3_600_000;
const NOW = Date.UTC(2026, 10, 18, 12);
const H0 = NOW - 3 * HOUR;

beforeEach(async () => {
  await resetDb(db);
});

type StateRow = { session_id: string; client_name: string; hour_start_ms: number; calls_json: string; latest_per_tool_json: string | null };

/** For each tool of a row's calls, the positions of its latest call and of the one before (started_at, then call_seq). */
function expectedLatest(callsJson: string): Record<string, number[]> {
  const rows = JSON.parse(callsJson) as [number, string, number][];
  const byTool = new Map<string, { position: number; started: number; seq: number }[]>();
  rows.forEach(([seq, tool, started], position) => {
    byTool.set(tool, [...(byTool.get(tool) ?? []), { position, started, seq }]);
  });
  return Object.fromEntries(
    [...byTool].map(([tool, list]) => [
      tool,
      list.sort((a, b) => b.started - a.started || b.seq - a.seq).slice(0, 2).map((c) => c.position),
    ]),
  );
}

async function stateRows(): Promise<StateRow[]> {
  const { results } = await db
    .prepare("SELECT session_id, client_name, hour_start_ms, calls_json, latest_per_tool_json FROM call_state ORDER BY 1, 2, 3")
    .all<StateRow>();
  return results;
}

async function expectEveryRowKeyed(): Promise<void> {
  const rows = await stateRows();
  expect(rows.length).toBeGreaterThan(0);
  for (const row of rows) expect(JSON.parse(row.latest_per_tool_json!)).toEqual(expectedLatest(row.calls_json));
}

const TOOLS = ["search", "fetch", `say "hi"\\`, "ünï"];

/** Deterministic calls of two sessions over three hours; `shuffle` delivers them out of time order. */
function workload(n: number, seed: number): TestCall[] {
  let x = seed;
  const next = () => (x = (x * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648;
  return Array.from({ length: n }, (_, i) =>
    call({
      session_id: i % 3 === 0 ? "s2" : "s1",
      tool_name: TOOLS[Math.floor(next() * TOOLS.length)]!,
      started_at_ms: H0 + Math.floor((i / n) * 3 * HOUR) + (next() < 0.2 ? -Math.floor(next() * HOUR) : 0),
      args_hash: next() < 0.3 ? "bbbb" : "aaaa",
      duration_ms: Math.floor(next() * 5_000),
    }),
  );
}

async function deliverInRequests(list: TestCall[], perRequest: number, runEvery: number): Promise<void> {
  for (let i = 0, request = 0; i < list.length; i += perRequest, request++) {
    await deliver(db, calls(list.slice(i, i + perRequest)), NOW - HOUR + request * 1_000);
    if (request % runEvery === runEvery - 1) await runRollup(db, NOW + request * 60_000);
  }
  await runRollup(db, NOW + 10 * HOUR);
}

describe("each tool's two latest calls of a state row", () => {
  it("are kept right by appends in time order and out of it", async () => {
    const list = workload(240, 7);
    await deliverInRequests(list, 7, 2);
    await expectEveryRowKeyed();
  });

  it("give the same figures as one rollup of all the calls", async () => {
    const list = workload(240, 11);
    await deliverInRequests(list, 5, 1);
    const stepwise = await snapshot(db);
    await resetDb(db);
    await deliver(db, calls(list), NOW - HOUR);
    await runRollup(db, NOW + 10 * HOUR);
    expect(stepwise).toEqual(await snapshot(db));
  });

  it("are rewritten keyed by tool on the next append to a row that holds a plain list", async () => {
    await deliver(db, calls(workload(40, 3).filter((c) => c.started_at_ms < H0 + HOUR)), NOW - HOUR);
    await runRollup(db, NOW);
    const [before] = await stateRows();
    const positions = Object.values(JSON.parse(before!.latest_per_tool_json!) as Record<string, number[]>).flat().sort((a, b) => a - b);
    await db.prepare("UPDATE call_state SET latest_per_tool_json = ?1 WHERE session_id = ?2 AND hour_start_ms = ?3")
      .bind(JSON.stringify(positions), before!.session_id, before!.hour_start_ms).run();
    await deliver(db, calls([call({ session_id: before!.session_id, tool_name: "fetch", started_at_ms: H0 + 30 * 60_000 })]), NOW - HOUR / 2);
    await runRollup(db, NOW + HOUR);
    await expectEveryRowKeyed();
  });
});
