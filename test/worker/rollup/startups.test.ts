// SPEC §2.4–2.5 from startups and agreement verdicts: registered tools (latest received startup
// wins), tool versions (churn, convergence), session schema bytes, agreement checks and declarations.
import { env } from "cloudflare:test";
import { beforeEach, describe, expect, it } from "vitest";
import { runRollup } from "../../../src/worker/rollup/index.ts";
import { deliver, resetDb, snapshot, type TestAgreement, type TestStartup, type TestTool } from "./fixtures.ts";
import { startupsWatermarkSql } from "../../../src/worker/db/rollup-state.ts";

const db = env.DB;
const NOW = Date.UTC(2026, 10, 21, 12);
const DAY = 86_400_000;

beforeEach(() => resetDb(db));

const tool = (name: string, over: Partial<TestTool> = {}): TestTool => ({
  name, schema_bytes: 100, schema_hash: "5c01", description_hash: "d001", description_norm: "n001", policy: null, ...over,
});
const startup = (session_id: string, tools: TestTool[], over: Partial<TestStartup> = {}): TestStartup => ({
  project_id: "p1", session_id, client_name: "claude", tools, agree_declared: [], ...over,
});

describe("registered tools", () => {
  it("are the tool list of the project's most recently received startup, whatever its session", async () => {
    await deliver(db, [{ type: "startup", startup: startup("s1", [tool("search"), tool("fetch"), tool("admin", { policy: { requires_authorization: true, requires_verified_identity: false } })]) }], NOW - 3_000);
    await runRollup(db, NOW);
    expect((await snapshot(db)).registered.map((r) => [r.tool_name, r.requires_authorization])).toEqual([["admin", 1], ["fetch", 0], ["search", 0]]);

    // A later startup from another session with fewer tools replaces the list; one in another project does not.
    await deliver(db, [{ type: "startup", startup: startup("s2", [tool("search", { schema_bytes: 250 })]) }], NOW - 2_000);
    await deliver(db, [{ type: "startup", startup: startup("s9", [tool("other")], { project_id: "p2" }) }], NOW - 1_000);
    await runRollup(db, NOW);
    const registered = (await snapshot(db)).registered;
    expect(registered.map((r) => [r.project_id, r.tool_name, r.schema_bytes])).toEqual([["p1", "search", 250], ["p2", "other", 100]]);
  });

  it("an empty tool list leaves the project with no registered tools", async () => {
    await deliver(db, [{ type: "startup", startup: startup("s1", [tool("search")]) }], NOW - 2_000);
    await deliver(db, [{ type: "startup", startup: startup("s1", []) }], NOW - 1_000);
    await runRollup(db, NOW, { chunkStartups: 1 });
    expect((await snapshot(db)).registered).toEqual([]);
  });
});

describe("sessions' schema bytes", () => {
  it("are the sum of the session's latest startup's schema_bytes", async () => {
    await deliver(db, [{ type: "startup", startup: startup("s1", [tool("a", { schema_bytes: 10 }), tool("b", { schema_bytes: 20 })]) }], NOW - 2_000);
    await deliver(db, [{ type: "startup", startup: startup("s1", [tool("a", { schema_bytes: 7 })]) }], NOW - 1_000);
    await deliver(db, [{ type: "startup", startup: startup("s2", [tool("a", { schema_bytes: 5 })]) }], NOW - 500);
    await runRollup(db, NOW);
    expect((await snapshot(db)).sessions.map((s) => [s.session_id, s.schema_bytes_sum])).toEqual([["s1", 7], ["s2", 5]]);
  });
});

describe("tool versions (SPEC §2.5 churn and convergence)", () => {
  it("records every distinct (schema_hash, description_hash) with first/last receive time and startup count", async () => {
    await deliver(db, [{ type: "startup", startup: startup("s1", [tool("search")]) }], NOW - 3 * DAY);
    await deliver(db, [{ type: "startup", startup: startup("s2", [tool("search")]) }], NOW - 2 * DAY);
    // Churn: description changed, schema did not. Absent hashes are stored as ''.
    await deliver(db, [{ type: "startup", startup: startup("s3", [tool("search", { description_hash: "d002", description_norm: "n002" }), tool("fetch", { schema_hash: null, description_hash: null })]) }], NOW - DAY);
    await runRollup(db, NOW, { chunkStartups: 2 });
    expect((await snapshot(db)).versions).toEqual([
      { project_id: "p1", tool_name: "fetch", schema_hash: "", description_hash: "", description_norm: "n001", first_seen_ms: NOW - DAY, last_seen_ms: NOW - DAY, startups: 1 },
      { project_id: "p1", tool_name: "search", schema_hash: "5c01", description_hash: "d001", description_norm: "n001", first_seen_ms: NOW - 3 * DAY, last_seen_ms: NOW - 2 * DAY, startups: 2 },
      { project_id: "p1", tool_name: "search", schema_hash: "5c01", description_hash: "d002", description_norm: "n002", first_seen_ms: NOW - DAY, last_seen_ms: NOW - DAY, startups: 1 },
    ]);
  });
});

describe("agreement", () => {
  it("counts checks and disagreements per UTC day of checked_at, and records declared fields", async () => {
    const verdict = (agreed: boolean, checked_at_ms: number): TestAgreement => ({
      project_id: "p1", session_id: "s1", field: "total", tool_a: "search", tool_b: "fetch", agreed, checked_at_ms, window_ms: 300_000,
    });
    const midnight = Date.UTC(2026, 10, 21);
    await deliver(
      db,
      [
        { type: "agreement", agreement: verdict(true, midnight - 1) },
        { type: "agreement", agreement: verdict(false, midnight) },
        { type: "agreement", agreement: verdict(true, midnight + 1) },
        { type: "startup", startup: startup("s1", [], { agree_declared: [{ field: "total", tools: ["search", "fetch"] }, { field: "count", tools: ["list"] }] }) },
      ],
      NOW - 1_000,
    );
    await runRollup(db, NOW, { chunkAgreements: 2 });
    const snap = await snapshot(db);
    expect(snap.agreementDays.map((r) => [r.day_start_ms, r.checks, r.disagreements])).toEqual([
      [midnight - DAY, 1, 0],
      [midnight, 2, 1],
    ]);
    expect(snap.declarations.map((r) => [r.field, r.tool_name, r.last_declared_ms])).toEqual([
      ["count", "list", NOW - 1_000],
      ["total", "fetch", NOW - 1_000],
      ["total", "search", NOW - 1_000],
    ]);
  });
});

describe("startup chunks are bounded in rows", () => {
  // 3 tools + 2 fields × 3 tools = 9 rows of work per startup.
  const heavy = (s: number) =>
    startup(`s${s}`, [tool(`a${s}`), tool(`b${s}`), tool(`c${s}`)], {
      agree_declared: [{ field: `f${s}`, tools: ["x", "y", "z"] }, { field: `g${s}`, tools: ["x", "y", "z"] }],
    });
  const watermark = async () =>
    (await db.prepare(`SELECT ${startupsWatermarkSql()} AS value`).first<{ value: number }>())?.value ?? 0;
  const seqs = async () => (await db.prepare("SELECT startup_seq FROM raw_startups ORDER BY startup_seq").all<{ startup_seq: number }>()).results.map((r) => r.startup_seq);

  it("takes startups while their rows fit, always at least one, and folds them all exactly", async () => {
    for (let s = 0; s < 5; s++) await deliver(db, [{ type: "startup", startup: heavy(s) }], NOW - 5_000 + s);
    const all = await seqs();
    const { rollupStartupChunk } = await import("../../../src/worker/rollup/startups.ts");
    // 18 rows fit two startups (9 + 9), not three (27).
    expect((await rollupStartupChunk(db, 200, 18)).new_startups).toBe(2);
    expect(await watermark()).toBe(all[1]);
    expect((await rollupStartupChunk(db, 200, 17)).new_startups).toBe(1);
    // Under one startup's cost, the first pending one is still taken: a chunk always advances.
    expect((await rollupStartupChunk(db, 200, 1)).new_startups).toBe(1);
    const last = await rollupStartupChunk(db, 200, 1_000);
    expect(last).toEqual({ new_startups: 1, more: 0, versions: 0 });
    const snap = await snapshot(db);
    expect(snap.registered.map((r) => r.tool_name)).toEqual(["a4", "b4", "c4"]);
    const declarations = await db.prepare("SELECT COUNT(*) AS n FROM agreement_declarations").first<{ n: number }>();
    expect(declarations?.n).toBe(5 * 2 * 3);
  });
});
