// The time reach of a span must hold the new calls' neighbours' neighbours: a call whose retry
// flag a new call changes (n, or p) needs its own other neighbour (nn, or pp) to count its
// first-call success, and that one can start up to two durations and two retry windows away —
// across an hour boundary from the new call.
import { env } from "cloudflare:test";
import { expect, it } from "vitest";
import { runRollup } from "../../../src/worker/rollup/index.ts";
import { call, deliver, resetDb, snapshot, type TestCall, type TestPayload } from "./fixtures.ts";
import { referenceRollup, type Received } from "./reference.ts";

const db = env.DB;
const H = Date.UTC(2026, 10, 20, 10);
const MIN = 60_000;

async function rollInTwoSteps(first: TestCall[], second: TestCall[]): Promise<void> {
  await resetDb(db);
  const received: Received<TestCall>[] = [];
  for (const [i, list] of [first, second].entries()) {
    await deliver(db, list.map((c): TestPayload => ({ type: "call", call: c })), H + 2 * 3_600_000 + i);
    for (const c of list) received.push({ seq: received.length, received_at_ms: H + 2 * 3_600_000 + i, item: c });
    await runRollup(db, H + 3 * 3_600_000 + i * 300_000);
  }
  expect(await snapshot(db)).toEqual(referenceRollup(received, [], []));
}

it("a new call makes its successor a retry; the successor's own successor, in the next hour, keeps it from first-call success", async () => {
  const p = call({ started_at_ms: H + 58 * MIN, duration_ms: 20_000, args_hash: "a" });
  const n = call({ started_at_ms: H + 59 * MIN + 45_000, duration_ms: 20_000, args_hash: "b" });
  const nn = call({ started_at_ms: H + 60 * MIN + 30_000, duration_ms: 0, args_hash: "c" });
  const c = call({ started_at_ms: H + 59 * MIN, duration_ms: 20_000, args_hash: "x" });
  await rollInTwoSteps([p, n, nn], [c]);
});

it("a new call retries its predecessor; the predecessor's own predecessor, in the hour before, makes it a retry", async () => {
  const pp = call({ started_at_ms: H - 30_000, duration_ms: 20_000, args_hash: "a" });
  const p = call({ started_at_ms: H + 5_000, duration_ms: 20_000, args_hash: "b" });
  const c = call({ started_at_ms: H + 50_000, duration_ms: 0, args_hash: "x" });
  await rollInTwoSteps([pp, p], [c]);
});
