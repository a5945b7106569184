// The rollup's bookkeeping rows after the upgrade that made each chunk write one state row instead
// of two (db/rollup-state.ts): the calls chunk keeps the base of its call numbers in `calls_chunk`,
// the startups chunk its range in `startups_chunk`. A deployment whose last chunks ran before has
// only `calls_seq` and `startups_seq` (and a `calls_chunk` without a base): numbering and folding
// continue from those, nothing numbered twice or folded again.
import { env } from "cloudflare:test";
import { beforeEach, describe, expect, it } from "vitest";
import { nextCallSeqSql, startupsWatermarkSql } from "../../../src/worker/db/rollup-state.ts";
import { runRollup } from "../../../src/worker/rollup/index.ts";
import { call, calls, deliver, resetDb, type TestPayload } from "./fixtures.ts";

const db = env.DB;
const NOW = Date.UTC(2026, 10, 18, 12);

beforeEach(async () => {
  await resetDb(db);
});

const value = async (sql: string) => (await db.prepare(`SELECT ${sql} AS v`).first<{ v: number }>())!.v;

/** Every call_seq in call_state, ascending. */
async function callSeqs(): Promise<number[]> {
  const { results } = await db.prepare("SELECT j.value ->> 0 AS seq FROM call_state, json_each(calls_json) AS j ORDER BY 1").all<{ seq: number }>();
  return results.map((r) => r.seq);
}

const startup = (session: string): TestPayload => ({
  type: "startup", startup: { project_id: "p1", session_id: session, client_name: "claude", tools: [], agree_declared: [] },
});

describe("state rows from before one row per chunk", () => {
  it("numbers the calls above calls_seq when the last calls chunk kept no base, then above its own", async () => {
    await db.batch([
      db.prepare("INSERT INTO rollup_state (name, value) VALUES ('calls_seq', 1000)"),
      db.prepare(`INSERT INTO rollup_state (name, value) VALUES ('calls_chunk', '{"batches":[],"spans":[],"calls":0,"touched":0,"more":0,"leader":null}')`),
    ]);
    expect(await value(nextCallSeqSql())).toBe(1000);
    await deliver(db, calls([call({ started_at_ms: NOW - 60_000 }), call({ started_at_ms: NOW - 50_000 })]), NOW - 40_000);
    await runRollup(db, NOW);
    expect(await callSeqs()).toEqual([1001, 1002]);
    expect(await value(nextCallSeqSql())).toBe(1002);
    await deliver(db, calls([call({ started_at_ms: NOW - 30_000 })]), NOW - 20_000);
    await runRollup(db, NOW + 60_000);
    expect(await callSeqs()).toEqual([1001, 1002, 1003]);
  });

  it("folds the startups above startups_seq when no chunk row holds the watermark, and ignores the old chunk end", async () => {
    await deliver(db, [startup("a"), startup("b"), startup("c")], NOW - 60_000);
    const { results } = await db.prepare("SELECT startup_seq FROM raw_startups ORDER BY 1").all<{ startup_seq: number }>();
    const seqs = results.map((r) => r.startup_seq);
    await db.batch([
      db.prepare("INSERT INTO rollup_state (name, value) VALUES ('startups_seq', ?1)").bind(seqs[1]),
      db.prepare("INSERT INTO rollup_state (name, value) VALUES ('startups_chunk_end', ?1)").bind(seqs[1]),
    ]);
    expect(await value(startupsWatermarkSql())).toBe(seqs[1]);
    const r = await runRollup(db, NOW);
    expect(r.newStartups).toBe(1);
    expect(await value(startupsWatermarkSql())).toBe(seqs[2]);
    const sessions = await db.prepare("SELECT session_id FROM sessions ORDER BY 1").all<{ session_id: string }>();
    expect(sessions.results.map((s) => s.session_id)).toEqual(["c"]);
    // Once the chunk row holds the watermark, the old row no longer counts.
    await db.prepare("UPDATE rollup_state SET value = 0 WHERE name = 'startups_seq'").run();
    expect((await runRollup(db, NOW + 60_000)).newStartups).toBe(0);
  });
});
