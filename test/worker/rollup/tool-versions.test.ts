// Tool versions counted in once an hour (db/tool-versions.ts, rollup/tool-versions.ts): a startup
// folded in by a startups chunk is in every answer at once (reads add the startups above the tool
// versions watermark), and in `tool_versions` after the first run of the next hour, counted once.
import { env } from "cloudflare:test";
import { beforeEach, describe, expect, it } from "vitest";
import { listToolVersions } from "../../../src/worker/db/metrics.ts";
import { TOOL_VERSIONS_WATERMARK } from "../../../src/worker/db/rollup-state.ts";
import { runRollup } from "../../../src/worker/rollup/index.ts";
import { deliver, resetDb, type TestPayload, type TestTool } from "./fixtures.ts";

const db = env.DB;
const HOUR = 3_600_000;
const H = Date.UTC(2026, 10, 18, 10); // an hour start

beforeEach(async () => {
  await resetDb(db);
});

const tool = (name: string, schema: string, norm: string): TestTool => ({
  name, schema_bytes: 100, schema_hash: schema, description_hash: `d-${norm}`, description_norm: norm, policy: null,
});
const startup = (session: string, tools: TestTool[]): TestPayload => ({
  type: "startup", startup: { project_id: "p1", session_id: session, client_name: "claude", tools, agree_declared: [] },
});

async function storedRows(): Promise<number> {
  return (await db.prepare("SELECT COUNT(*) AS n FROM tool_versions").first<{ n: number }>())!.n;
}
async function watermark(): Promise<number | null> {
  return (await db.prepare("SELECT value FROM rollup_state WHERE name = ?1").bind(TOOL_VERSIONS_WATERMARK).first<{ value: number }>())?.value ?? null;
}

describe("tool versions", () => {
  it("answer every folded startup at once, and are counted into tool_versions once, in the next hour", async () => {
    await deliver(db, [startup("a", [tool("search", "s1", "find"), tool("fetch", "f1", "get")])], H + 5 * 60_000);
    await deliver(db, [startup("b", [tool("search", "s1", "find"), tool("search", "s1", "find")])], H + 10 * 60_000); // one tool listed twice counts once
    await deliver(db, [startup("c", [tool("search", "s2", "find things")])], H + 20 * 60_000);
    await runRollup(db, H + 25 * 60_000);
    const expected = [
      { tool_name: "fetch", schema_hash: "f1", description_hash: "d-get", description_norm: "get", first_seen_ms: H + 5 * 60_000, last_seen_ms: H + 5 * 60_000, startups: 1 },
      { tool_name: "search", schema_hash: "s1", description_hash: "d-find", description_norm: "find", first_seen_ms: H + 5 * 60_000, last_seen_ms: H + 10 * 60_000, startups: 2 },
      { tool_name: "search", schema_hash: "s2", description_hash: "d-find things", description_norm: "find things", first_seen_ms: H + 20 * 60_000, last_seen_ms: H + 20 * 60_000, startups: 1 },
    ];
    // Within the hour: nothing written to tool_versions (the first chunk starts the watermark at 0), every version answered.
    expect(await storedRows()).toBe(0);
    expect(await watermark()).toBe(0);
    expect(await listToolVersions(db, "p1")).toEqual(expected);

    // A startup of the next hour, and the hour's first run: the three of the finished hour are counted in, the new one is not.
    // Startup d: the same version, its description normalised differently (the norm follows the latest startup).
    await deliver(db, [startup("d", [{ ...tool("search", "s1", "find again"), description_hash: "d-find" }])], H + HOUR + 60_000);
    const r = await runRollup(db, H + HOUR + 2 * 60_000);
    expect(r.caughtUp).toBe(true);
    expect(await storedRows()).toBe(3);
    expect(await watermark()).toBe(3);
    // Answers: the stored rows plus the pending startup, its norm the latest.
    expect(await listToolVersions(db, "p1")).toEqual([
      expected[0],
      { ...expected[1], description_norm: "find again", last_seen_ms: H + HOUR + 60_000, startups: 3 },
      expected[2],
    ]);
    // Runs later in the hour count nothing again; the next hour's first run counts startup d.
    await runRollup(db, H + HOUR + 30 * 60_000);
    expect(await watermark()).toBe(3);
    await runRollup(db, H + 2 * HOUR);
    expect(await watermark()).toBe(4);
    const stored = await db.prepare("SELECT startups, description_norm FROM tool_versions WHERE tool_name = 'search' AND schema_hash = 's1'").first();
    expect(stored).toEqual({ startups: 3, description_norm: "find again" });
    expect((await listToolVersions(db, "p1"))[1]).toMatchObject({ startups: 3, description_norm: "find again" });
  });

  it("after an upgrade counts nothing twice: the watermark starts where the startups chunks are", async () => {
    await deliver(db, [startup("a", [tool("search", "s1", "find")])], H);
    await runRollup(db, H + 60_000);
    // As before migration 0029: the startup counted in tool_versions, no tool versions watermark.
    await runRollup(db, H + HOUR);
    expect(await storedRows()).toBe(1);
    await db.prepare("DELETE FROM rollup_state WHERE name = ?1").bind(TOOL_VERSIONS_WATERMARK).run();
    // With no row, the watermark reads as startups_seq: nothing pending, nothing counted twice.
    expect((await listToolVersions(db, "p1"))[0]).toMatchObject({ startups: 1 });
    await deliver(db, [startup("b", [tool("search", "s1", "find")])], H + HOUR + 60_000);
    await runRollup(db, H + HOUR + 2 * 60_000);
    expect(await watermark()).toBe(1);
    expect((await listToolVersions(db, "p1"))[0]).toMatchObject({ startups: 2 });
    await runRollup(db, H + 2 * HOUR);
    expect((await listToolVersions(db, "p1"))[0]).toMatchObject({ startups: 2 });
    expect(await db.prepare("SELECT startups FROM tool_versions").first()).toEqual({ startups: 2 });
  });
});
