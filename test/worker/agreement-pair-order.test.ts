// Agreement pairs in code-point order (SPEC §2.5): ingest stores (tool_a, tool_b) with the smaller
// name by code point first, whichever order the producer sent, and migrations/0002 gives the rows a
// first-release database stored the same order, merging the day rows that become duplicates. The
// case that tells code points from JavaScript's UTF-16 `<`: an astral character (🚀 U+1F680, sent as
// the surrogates D83D DE80) against one in U+E000–U+FFFF (ﬁ U+FB01), where the two orders disagree.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { compareByCodePoint } from "../../src/shared/index.ts";
import { agreementPairOrder } from "../../src/worker/db/raw-writes.ts";
import worker from "../../src/worker/index.ts";
import { agreementPayload, postIngest, storedRows } from "./helpers/ingest.ts";
import { createProject } from "./helpers/projects.ts";
import { getJson } from "./metrics/seed.ts";
import { runCron } from "./helpers/cron.ts";

const ROCKET = "🚀launch"; // U+1F680: first by UTF-16 unit, last by code point
const LIGATURE = "\ufb01nd"; // U+FB01 "ﬁnd"
const PRIVATE = "\ue000tool"; // U+E000, the start of the range where the two orders part
const REPLACEMENT = "\ufffd"; // what a lone surrogate is stored as

const DAY = 86_400_000;
const MIGRATION = "0002_agreement_pair_order.sql";

type AgreementBody = { agreement: { field: string; tool_a: string; tool_b: string; checks: number; disagreements: number }[] };


describe("the order itself", () => {
  it("is code-point order, not JavaScript's UTF-16 order, for astral against U+E000–U+FFFF", () => {
    // The premise of the test: the two orders disagree here.
    expect(ROCKET < LIGATURE).toBe(true);
    expect(agreementPairOrder(ROCKET, LIGATURE)).toEqual([LIGATURE, ROCKET]);
    expect(agreementPairOrder(LIGATURE, ROCKET)).toEqual([LIGATURE, ROCKET]);
    expect(agreementPairOrder(ROCKET, PRIVATE)).toEqual([PRIVATE, ROCKET]);
    expect(agreementPairOrder(ROCKET, REPLACEMENT)).toEqual([REPLACEMENT, ROCKET]);
    expect(agreementPairOrder("b", "a")).toEqual(["a", "b"]);
    expect(agreementPairOrder("same", "same")).toEqual(["same", "same"]);
    expect(agreementPairOrder("ab", "a")).toEqual(["a", "ab"]);
  });

  it("is the order SQLite's BINARY collation gives the stored names (what migration 0002 compares)", async () => {
    const names = [ROCKET, LIGATURE, PRIVATE, REPLACEMENT, "a", "ab", "B", "é", "\u07ff", "\u0800", "\ud7ff", "😀", "\u{10ffff}", "a🚀", "a\uffff", ""];
    const { results } = await env.DB.prepare("SELECT value AS name FROM json_each(?1) ORDER BY value COLLATE BINARY")
      .bind(JSON.stringify(names))
      .all<{ name: string }>();
    expect(results.map((r) => r.name)).toEqual([...names].sort(compareByCodePoint));
    expect(results.map((r) => r.name)).not.toEqual([...names].sort());
  });
});

describe("ingest", () => {
  it("stores a pair sent in either order as one (tool_a, tool_b), and the rollup and read API see one row", async () => {
    const p = await createProject();
    const batch = [
      agreementPayload({ field: "total", tool_a: ROCKET, tool_b: LIGATURE, agreed: true }),
      agreementPayload({ field: "total", tool_a: LIGATURE, tool_b: ROCKET, agreed: false }),
      agreementPayload({ field: "total", tool_a: "search_orders", tool_b: "get_order", agreed: true }),
      agreementPayload({ field: "total", tool_a: "get_order", tool_b: "search_orders", agreed: false }),
      agreementPayload({ field: "total", tool_a: "get_order", tool_b: "search_orders", agreed: false }),
      agreementPayload({ field: "total", tool_a: ROCKET, tool_b: PRIVATE, agreed: true }),
    ];
    expect((await postIngest({ batch }, { key: p.ingest_key })).status).toBe(202);
    const rows = await storedRows(p.project_id);
    expect(rows.agreements.map((r) => [r.tool_a, r.tool_b])).toEqual([
      [LIGATURE, ROCKET],
      [LIGATURE, ROCKET],
      ["get_order", "search_orders"],
      ["get_order", "search_orders"],
      ["get_order", "search_orders"],
      [PRIVATE, ROCKET],
    ]);
    await runCron();
    const { body } = await getJson<AgreementBody>("/v1/metrics/agreement", p.read_key);
    expect(body.agreement.map((r) => [r.tool_a, r.tool_b, r.checks, r.disagreements])).toEqual([
      ["get_order", "search_orders", 3, 2],
      [PRIVATE, ROCKET, 1, 0],
      [LIGATURE, ROCKET, 2, 1],
    ]);
  });

  it("orders the names as stored: a lone surrogate becomes U+FFFD before it is compared", async () => {
    const p = await createProject();
    // "\udc00" alone sorts before "\ue000" by UTF-16 unit, but is stored as U+FFFD, which sorts after it.
    const body = JSON.stringify({ batch: [agreementPayload({ tool_a: "TOOL_A", tool_b: PRIVATE })] }).replace('"TOOL_A"', '"\\udc00"');
    expect((await postIngest(body, { key: p.ingest_key })).status).toBe(202);
    expect((await storedRows(p.project_id)).agreements.map((r) => [r.tool_a, r.tool_b])).toEqual([[PRIVATE, REPLACEMENT]]);
  });
});

describe("migration 0002 on rows stored before it", () => {
  /** Runs the migration's own statements, as wrangler applies them (one batch). */
  async function applyMigration0002(): Promise<void> {
    const migration = env.TEST_MIGRATIONS.find((m) => m.name === MIGRATION);
    expect(migration, MIGRATION).toBeDefined();
    await env.DB.batch(migration!.queries.map((q) => env.DB.prepare(q)));
  }

  const insertDay = (projectId: string, dayMs: number, field: string, a: string, b: string, checks: number, disagreements: number) =>
    env.DB.prepare("INSERT INTO agreement_days (project_id, day_start_ms, field, tool_a, tool_b, checks, disagreements) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")
      .bind(projectId, dayMs, field, a, b, checks, disagreements);
  const insertRaw = (projectId: string, a: string, b: string, agreed: boolean, checkedAtMs: number) =>
    env.DB.prepare(
      "INSERT INTO raw_agreements (project_id, session_id, field, tool_a, tool_b, agreed, checked_at_ms, window_ms, received_at_ms) VALUES (?1, 's', 'total', ?2, ?3, ?4, ?5, 1000, ?5)",
    ).bind(projectId, a, b, agreed ? 1 : 0, checkedAtMs);

  async function days(projectId: string) {
    const { results } = await env.DB.prepare(
      "SELECT day_start_ms, field, tool_a, tool_b, checks, disagreements FROM agreement_days WHERE project_id = ?1 ORDER BY day_start_ms, field, tool_a, tool_b",
    )
      .bind(projectId)
      .all<{ day_start_ms: number; field: string; tool_a: string; tool_b: string; checks: number; disagreements: number }>();
    return results.map((r) => [r.day_start_ms, r.field, r.tool_a, r.tool_b, r.checks, r.disagreements]);
  }

  it("is recorded as applied after 0001", async () => {
    const { results } = await env.DB.prepare("SELECT name FROM d1_migrations ORDER BY id").all<{ name: string }>();
    expect(results.map((r) => r.name).slice(0, 2)).toEqual(["0001_first_release.sql", MIGRATION]);
  });

  it("swaps reversed raw verdicts, merges the day rows that become duplicates, and leaves the rest", async () => {
    const p = await createProject();
    const other = await createProject();
    const d1 = Math.floor(Date.now() / DAY) * DAY - DAY;
    const d2 = d1 + DAY;
    await env.DB.batch([
      // Both orders of one pair on one day: merged into one row, counts summed.
      insertDay(p.project_id, d1, "total", "get_order", "search_orders", 5, 1),
      insertDay(p.project_id, d1, "total", "search_orders", "get_order", 3, 2),
      // Only the reversed order: the row is renamed.
      insertDay(p.project_id, d2, "total", "search_orders", "get_order", 7, 0),
      // The astral pair: in JavaScript's order, reversed by code point; and its twin in code-point order.
      insertDay(p.project_id, d1, "price", ROCKET, LIGATURE, 4, 4),
      insertDay(p.project_id, d1, "price", LIGATURE, ROCKET, 6, 1),
      insertDay(p.project_id, d2, "price", ROCKET, PRIVATE, 2, 1),
      // Already in order, and a pair of one tool with itself: untouched.
      insertDay(p.project_id, d2, "stock", "a", "b", 9, 9),
      insertDay(p.project_id, d2, "stock", "same", "same", 1, 0),
      // Another field and another project are other rows: never merged with these.
      insertDay(p.project_id, d1, "count", "search_orders", "get_order", 1, 1),
      insertDay(other.project_id, d1, "total", "search_orders", "get_order", 100, 50),
      insertRaw(p.project_id, ROCKET, LIGATURE, true, d1 + 1),
      insertRaw(p.project_id, LIGATURE, ROCKET, false, d1 + 2),
      insertRaw(p.project_id, "search_orders", "get_order", true, d1 + 3),
      insertRaw(p.project_id, "same", "same", true, d1 + 4),
    ]);

    await applyMigration0002();

    expect(await days(p.project_id)).toEqual([
      [d1, "count", "get_order", "search_orders", 1, 1],
      [d1, "price", LIGATURE, ROCKET, 10, 5],
      [d1, "total", "get_order", "search_orders", 8, 3],
      [d2, "price", PRIVATE, ROCKET, 2, 1],
      [d2, "stock", "a", "b", 9, 9],
      [d2, "stock", "same", "same", 1, 0],
      [d2, "total", "get_order", "search_orders", 7, 0],
    ]);
    expect(await days(other.project_id)).toEqual([[d1, "total", "get_order", "search_orders", 100, 50]]);
    const raw = (await storedRows(p.project_id)).agreements;
    expect(raw.map((r) => [r.tool_a, r.tool_b, r.agreed])).toEqual([
      [LIGATURE, ROCKET, 1],
      [LIGATURE, ROCKET, 0],
      ["get_order", "search_orders", 1],
      ["same", "same", 1],
    ]);
    // Every stored pair is now in the order ingest writes.
    for (const r of raw) expect(agreementPairOrder(String(r.tool_a), String(r.tool_b))).toEqual([r.tool_a, r.tool_b]);

    // Running it again changes nothing: no pair is out of order any more.
    const before = [await days(p.project_id), await days(other.project_id)];
    await applyMigration0002();
    expect([await days(p.project_id), await days(other.project_id)]).toEqual(before);
  });

  it("gives the read API the answer a database that stored the pairs in order would give", async () => {
    const migrated = await createProject();
    const ordered = await createProject();
    const d = Math.floor(Date.now() / DAY) * DAY;
    await env.DB.batch([
      insertDay(migrated.project_id, d, "price", ROCKET, LIGATURE, 4, 4),
      insertDay(migrated.project_id, d, "price", LIGATURE, ROCKET, 6, 1),
      insertDay(migrated.project_id, d, "total", "search_orders", "get_order", 3, 0),
      insertDay(ordered.project_id, d, "price", LIGATURE, ROCKET, 10, 5),
      insertDay(ordered.project_id, d, "total", "get_order", "search_orders", 3, 0),
    ]);
    await applyMigration0002();
    const a = await getJson<AgreementBody>("/v1/metrics/agreement", migrated.read_key);
    const b = await getJson<AgreementBody>("/v1/metrics/agreement", ordered.read_key);
    expect(a.body.agreement).toEqual(b.body.agreement);
    expect(a.body.agreement.map((r) => [r.tool_a, r.tool_b, r.checks])).toEqual([
      [LIGATURE, ROCKET, 10],
      ["get_order", "search_orders", 3],
    ]);
  });
});
