// Upgrading keeps every row (docs/migrations.md): a database made by the first release — its own
// schema.sql, filled by its own ingest and rollup (test/fixtures/first-release) — is migrated to head
// with the migrations a deploy applies, and then every /v1/metrics/* answer equals the one a fresh
// head database gives for the same payloads, sent in the same batches with the rollup at the same
// points. Each migration that changes the layout or a definition extends what this test checks:
// 0002 (agreement pairs in code-point order) with verdicts naming pairs in both orders.
// 0003 (retries and pairs per client, SPEC §2.2, §2.4) recomputes flags the first release derived
// per session, so the workload must hold two clients interleaved in one session.
// 0032 (each call_state row's latest calls per tool) leaves the rows it finds without the list: a
// late call after all of such a row's calls reads it whole, and the answers stay equal.
import fc from "fast-check";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, expect, test } from "vitest";
import { readMigrations, applyMigrations } from "../../scripts/migrations.ts";
import { createProject, startWorker, type RunningWorker } from "./dashboard/start-worker.ts";
import { CALLED_TOOLS, CLIENTS, DAY_MS, UNCALLED_TOOLS, generateWorkload, toPayload, type Item } from "./conformance/workload.ts";
import { Reference, dayOf } from "./conformance/reference.ts";
import { storedPayloadRows } from "./helpers/stored-rows.ts";

const FIRST_RELEASE = fileURLToPath(new URL("../fixtures/first-release/", import.meta.url));

/** The first release applied its schema.sql statement by statement (split on `;` at line end). */
function firstReleaseStatements(): string[] {
  return readFileSync(join(FIRST_RELEASE, "schema.sql"), "utf8")
    .split(/;\s*$/m)
    .map((s) => s.replace(/^\s*--.*$/gm, "").trim())
    .filter((s) => s.length > 0);
}

/** Rows of a project the first release's ingest has written (its four raw tables). */
async function firstReleaseRows(db: D1Database, projectId: string): Promise<number> {
  const row = await db
    .prepare(
      `SELECT (SELECT COUNT(*) FROM incoming_calls WHERE project_id = ?1)
        + (SELECT COUNT(*) FROM raw_calls WHERE project_id = ?1)
        + (SELECT COUNT(*) FROM raw_startups WHERE project_id = ?1)
        + (SELECT COUNT(*) FROM raw_agreements WHERE project_id = ?1) AS n`,
    )
    .bind(projectId)
    .first<{ n: number }>();
  return row?.n ?? 0;
}

type Target = {
  worker: RunningWorker;
  project: Awaited<ReturnType<typeof createProject>>;
  rows: (db: D1Database, projectId: string) => Promise<number>;
};

async function waitForRows(target: Target, expected: number): Promise<void> {
  const deadline = Date.now() + 20_000;
  while ((await target.rows(target.worker.db, target.project.project_id)) < expected) {
    if (Date.now() > deadline) throw new Error(`only ${await target.rows(target.worker.db, target.project.project_id)} of ${expected} rows landed`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function get(target: Target, path: string): Promise<unknown> {
  const res = await fetch(`${target.worker.url}${path}`, { headers: { authorization: `Bearer ${target.project.read_key}` } });
  expect(res.status, path).toBe(200);
  return res.json();
}

/** Fields that hold a startup's receive time (descriptions' first/last seen, a schema change's time). */
const RECEIVE_TIMES = new Set(["first_seen", "last_seen", "changed_at"]);

/** When this file started: every receive time its workers record falls between this and now. */
const FILE_STARTED_MS = Date.now();

/** A receive time this run's workers recorded: a timestamp between the file's start and now. */
function receivedInThisRun(value: unknown): boolean {
  if (typeof value !== "string") return false;
  const ms = Date.parse(value);
  return ms >= FILE_STARTED_MS - 1_000 && ms <= Date.now();
}

/**
 * The two databases received each batch at their own moment (how far apart depends on the machine),
 * so a receive time is only checked to be one this run recorded; every other figure must be equal.
 * Returns `head` with the receive times of `migrated` wherever both are such times, so one toEqual
 * shows any other difference.
 */
function alignReceiveTimes(migrated: unknown, head: unknown): unknown {
  if (Array.isArray(migrated) && Array.isArray(head)) return head.map((h, i) => alignReceiveTimes(migrated[i], h));
  if (migrated && head && typeof migrated === "object" && typeof head === "object") {
    const m = migrated as Record<string, unknown>;
    return Object.fromEntries(
      Object.entries(head).map(([k, h]) => {
        const close = RECEIVE_TIMES.has(k) && receivedInThisRun(h) && receivedInThisRun(m[k]);
        return [k, close ? m[k] : alignReceiveTimes(m[k], h)];
      }),
    );
  }
  return head;
}

/**
 * Pairs each sent as (a, b) and as (b, a): (field, a, b) with a first by code point. "🚀launch"
 * (U+1F680) is first by UTF-16 unit, last by code point, against "ﬁnd" (U+FB01).
 */
const PAIRS_IN_BOTH_ORDERS = [
  ["pair order astral", "\ufb01nd", "🚀launch"],
  ["pair order ascii", "get_order", "search_orders"],
] as const;

function pairVerdict(field: string, toolA: string, toolB: string, agreed: boolean, checkedMs: number) {
  return {
    v: 1, type: "agreement", session_id: "s_pairorder01", field, tool_a: toolA, tool_b: toolB, agreed,
    checked_at: new Date(checkedMs).toISOString(), window_ms: 300_000,
  };
}

const cleanup: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const fn of cleanup.reverse()) await fn();
});

test("a first-release database migrated to head answers every metric as a fresh head database", async () => {
  const persistTo = mkdtempSync(join(tmpdir(), "mcpulse-upgrade-"));
  cleanup.push(async () => rmSync(persistTo, { recursive: true, force: true }));
  const old = await startWorker({
    build: { scriptPath: join(FIRST_RELEASE, "worker.js"), wranglerToml: join(FIRST_RELEASE, "wrangler.toml") },
    persistTo,
    prepareDb: (db) => db.batch(firstReleaseStatements().map((s) => db.prepare(s))),
  });
  let oldStopped = false;
  cleanup.push(async () => {
    if (!oldStopped) await old.stop();
  });
  const fresh = await startWorker();
  cleanup.push(() => fresh.stop());

  const targets: Target[] = [
    { worker: old, project: await createProject(old, "upgrade"), rows: firstReleaseRows },
    { worker: fresh, project: await createProject(fresh, "upgrade"), rows: storedPayloadRows },
  ];

  // A fixed workload (the conformance generator with a fixed seed) around now: it fits the default
  // 7-day range at any hour, and crosses midnights, clients, retries, startups and verdicts.
  const nowMs = Date.now();
  const [g] = fc.sample(fc.gen(), { numRuns: 1, seed: 20261201 });
  const workload = generateWorkload(g!, nowMs, { sessionless: false });
  // Two clients interleaved in one session, whatever the seed gives: the first release counted
  // these as retries and pairs across clients; after 0003 they must not be.
  const twoClients: Item[] = [0, 1, 2, 3].map((i) => ({
    type: "call", session_id: "s_two_clients", client_name: CLIENTS[i % 2]!, tool_name: CALLED_TOOLS[i % 3]!,
    startedUs: (nowMs - 3_600_000 + i * 1_000) * 1000, duration_ms: 100, outcome: "ok", response_bytes: 10,
    is_empty: false, args_hash: i < 2 ? "aaaa11112222" : "bbbb33334444",
  }));
  twoClients.push({ ...(twoClients[0] as Extract<Item, { type: "call" }>), tool_name: CALLED_TOOLS[0], startedUs: (nowMs - 3_600_000 + 1_500) * 1000, args_hash: "cccc55556666" });
  workload.items.push(...twoClients);
  workload.batchSizes.push(twoClients.length);
  workload.wire.push(...twoClients.map(() => workload.wire[0]!));
  workload.rollupAfter.push(true);
  const coverage = new Reference(workload.items.filter((i) => i.type !== "junk").map((item, seq) => ({ ...item, seq, receivedMs: 0, landedMs: 0 }))).coverage();
  expect(coverage).toContain("other client's call in the retry window");
  expect(coverage).toContain("other client's call between a pair");
  let at = 0;
  let kept = 0;
  // The same cron time for both databases, so as_of agrees.
  let cronMs = 0;
  const rollBoth = async () => {
    cronMs = Date.now();
    for (const t of targets) await t.worker.runRollup(new Date(cronMs));
  };
  for (const [b, size] of workload.batchSizes.entries()) {
    const items = workload.items.slice(at, at + size);
    const body = JSON.stringify({ batch: items.map((item, i) => toPayload(item, workload.wire[at + i]!)) });
    at += size;
    kept += items.filter((item) => item.type !== "junk").length;
    for (const t of targets) {
      const res = await fetch(`${t.worker.url}/v1/ingest`, {
        method: "POST",
        headers: { authorization: `Bearer ${t.project.ingest_key}`, "content-type": "application/json" },
        body,
      });
      expect(res.status).toBe(202);
      // Receive order decides ties (SPEC §2.2): each batch lands before the next is sent.
      await waitForRows(t, kept);
    }
    if (workload.rollupAfter[b]) await rollBoth();
  }
  for (let run = 0; run < 5; run++) await rollBoth();

  // Migration 0002 (agreement pairs in code-point order, SPEC §2.5): verdicts naming each pair in both
  // orders, among them the astral/U+E000–U+FFFF pair where code-point and UTF-16 order disagree. The
  // first batch is rolled up by the first release (its day rows hold both orders, merged by the
  // migration); the second is still raw at the upgrade (its rows are swapped and rolled up by head).
  const sendBoth = async (payloads: unknown[]) => {
    kept += payloads.length;
    for (const t of targets) {
      const res = await fetch(`${t.worker.url}/v1/ingest`, {
        method: "POST",
        headers: { authorization: `Bearer ${t.project.ingest_key}`, "content-type": "application/json" },
        body: JSON.stringify({ batch: payloads }),
      });
      expect(res.status).toBe(202);
      await waitForRows(t, kept);
    }
  };
  const verdicts = (checkedMs: number) =>
    PAIRS_IN_BOTH_ORDERS.flatMap(([field, a, b], i) => [
      pairVerdict(field, a, b, i % 2 === 0, checkedMs),
      pairVerdict(field, b, a, false, checkedMs + 1),
      pairVerdict(field, b, a, true, checkedMs + 2),
    ]);
  await sendBoth([...verdicts(nowMs - 3_600_000), ...verdicts(nowMs - DAY_MS - 60_000)]);
  await rollBoth();
  await sendBoth(verdicts(nowMs - 120_000));

  // Calls still waiting for the rollup at the upgrade (in the first release's incoming_calls, moved
  // into raw_calls by 0006), late, between calls already rolled up: they turn their neighbours into
  // retries and move pairs, and the head rollup must fold them in exactly.
  const lateCall = (session: string, client: string, tool: string, offsetMs: number, hash: string): Item => ({
    type: "call", session_id: session, client_name: client, tool_name: tool,
    startedUs: (nowMs - 3_600_000 + offsetMs) * 1000, duration_ms: 100, outcome: "ok", response_bytes: 10,
    is_empty: false, args_hash: hash,
  });
  const sendCalls = (items: Item[]) => sendBoth(items.map((item) => toPayload(item, workload.wire[0]!)));
  await sendCalls([
    lateCall("s_two_clients", CLIENTS[0]!, CALLED_TOOLS[0]!, 500, "dddd77778888"),
    lateCall("s_two_clients", CLIENTS[1]!, CALLED_TOOLS[1]!, 2_500, "eeee99990000"),
  ]);

  // The upgrade, as `npm run deploy` does it: the first release's worker stops, the pending
  // migrations are applied (0001 recognises the existing tables), the head worker starts on the
  // same database, and its next cron runs.
  await old.stop();
  oldStopped = true;
  const upgraded = await startWorker({
    persistTo,
    prepareDb: async (db) => expect(await applyMigrations(db, await readMigrations())).toEqual((await readMigrations()).map((m) => m.name)),
  });
  cleanup.push(() => upgraded.stop());
  targets[0]!.worker = upgraded;
  targets[0]!.rows = storedPayloadRows;
  await rollBoth();

  // More than one database (SPEC §7, migration 0020): the one-database deployment keeps its project
  // where it was — no directory row is written, and a project without one lives in the first
  // database, which the upgraded worker (now with DB and DB_2) reads and writes as before.
  const adminGet = async (path: string) =>
    (await fetch(`${upgraded.url}${path}`, { headers: { authorization: `Bearer ${upgraded.adminToken}` } })).json();
  expect((await upgraded.db.prepare("SELECT COUNT(*) AS n FROM project_databases").first<{ n: number }>())!.n).toBe(0);
  expect(((await adminGet("/v1/admin/projects")) as { projects: { project_id: string; database: string }[] }).projects).toEqual([
    expect.objectContaining({ project_id: targets[0]!.project.project_id, database: "DB" }),
  ]);
  expect(((await adminGet("/v1/admin/databases")) as { databases: { name: string; projects: number }[] }).databases.map((d) => [d.name, d.projects])).toEqual([["DB", 1], ["DB_2", 0]]);

  // The migrated layout keeps taking data: more late calls between folded ones, and a new session
  // with a retry chain, ingested by the head worker into both databases.
  await sendCalls([
    lateCall("s_two_clients", CLIENTS[0]!, CALLED_TOOLS[0]!, 1_200, "ffff11112222"),
    lateCall("s_two_clients", CLIENTS[1]!, CALLED_TOOLS[2]!, 3_200, "aaaa11112222"),
    // 0032: after every call of a row the upgrade kept (no list of its latest calls per tool): the
    // migrated database reads that row whole, the fresh one only its latest calls per tool.
    lateCall("s_two_clients", CLIENTS[0]!, CALLED_TOOLS[2]!, 5_000, "aaaa11112222"),
    lateCall("s_after_upgrade", CLIENTS[0]!, CALLED_TOOLS[1]!, 10_000, "aaaa11112222"),
    lateCall("s_after_upgrade", CLIENTS[0]!, CALLED_TOOLS[1]!, 10_200, "bbbb33334444"),
    lateCall("s_after_upgrade", CLIENTS[0]!, CALLED_TOOLS[2]!, 10_400, "bbbb33334444"),
    // 0014: calls without a session, each a chain of its own (a retry if they had one).
    lateCall("", CLIENTS[0]!, CALLED_TOOLS[1]!, 11_000, "aaaa11112222"),
    lateCall("", CLIENTS[0]!, CALLED_TOOLS[1]!, 11_200, "bbbb33334444"),
  ]);
  await rollBoth();
  // Rows written before 0032 keep no list of their latest calls per tool (read whole), rows written
  // since keep one; every answer below is still equal to the fresh database's.
  const withoutList = async (t: Target, session?: string) =>
    (await t.worker.db.prepare(`SELECT COUNT(*) AS n FROM call_state WHERE latest_per_tool_json IS NULL ${session ? "AND session_id = ?1" : ""}`)
      .bind(...(session ? [session] : [])).first<{ n: number }>())!.n;
  expect(await withoutList(targets[0]!)).toBeGreaterThan(0);
  expect(await withoutList(targets[1]!)).toBe(0);
  for (const t of targets) expect(await withoutList(t, "s_after_upgrade")).toBe(0);
  // Counted in both databases, in no session and no call_state row.
  for (const t of targets) {
    const sessions = (await get(t, "/v1/metrics/sessions")) as { calls_without_session: number };
    expect(sessions.calls_without_session).toBe(2);
    const stateRows = await t.worker.db.prepare("SELECT COUNT(*) AS n FROM call_state WHERE session_id = ''").first<{ n: number }>();
    expect(stateRows!.n).toBe(0);
  }

  const today = dayOf(nowMs);
  const yesterday = dayOf(nowMs - DAY_MS);
  const weekStart = dayOf(nowMs - 6 * DAY_MS);
  const paths: string[] = [];
  const filterSets = ["", `client=${encodeURIComponent(CLIENTS[0])}`, `tool=${encodeURIComponent(CALLED_TOOLS[2])}`, `tool=${encodeURIComponent(UNCALLED_TOOLS[0])}`];
  for (const range of ["", `from=${weekStart}&to=${today}`, `from=${yesterday}&to=${yesterday}`]) {
    for (const filter of filterSets) {
      const q = [range, filter].filter(Boolean).join("&");
      for (const route of ["tools", "clients", "pairs", "insights"]) paths.push(`/v1/metrics/${route}?${q}`);
    }
    paths.push(`/v1/metrics/sessions?${range}`, `/v1/metrics/agreement?${range}`);
    for (const [, a, b] of PAIRS_IN_BOTH_ORDERS) {
      paths.push(`/v1/metrics/agreement?${[range, `tool=${encodeURIComponent(a)}`].filter(Boolean).join("&")}`);
      paths.push(`/v1/metrics/agreement?${[range, `tool=${encodeURIComponent(b)}`].filter(Boolean).join("&")}`);
    }
  }
  paths.push(
    `/v1/metrics/timeseries?grain=day`,
    `/v1/metrics/timeseries?grain=hour&from=${yesterday}&to=${today}`,
    `/v1/metrics/timeseries?grain=hour&from=${yesterday}&to=${today}&client=${encodeURIComponent(CLIENTS[1])}`,
    `/v1/metrics/descriptions`,
    `/v1/metrics/schema-regressions`,
    ...CALLED_TOOLS.map((tool) => `/v1/metrics/descriptions?tool=${encodeURIComponent(tool)}`),
  );
  let nonEmpty = 0;
  for (const path of paths) {
    const [migrated, head] = await Promise.all(targets.map((t) => get(t, path)));
    expect(migrated, path).toEqual(alignReceiveTimes(migrated, head));
    if (JSON.stringify(head).length > 200) nonEmpty++;
  }
  // The comparison is only worth something if the answers hold data.
  expect(nonEmpty).toBeGreaterThan(paths.length / 2);
  // One row per pair, whichever order each verdict named it in, in code-point order.
  for (const t of targets) {
    const { agreement } = (await get(t, "/v1/metrics/agreement")) as { agreement: { field: string; tool_a: string; tool_b: string; checks: number }[] };
    const pairRows = agreement.filter((r) => PAIRS_IN_BOTH_ORDERS.some(([field]) => field === r.field));
    expect(pairRows.map((r) => [r.field, r.tool_a, r.tool_b, r.checks])).toEqual([
      ["pair order astral", "\ufb01nd", "🚀launch", 9],
      ["pair order ascii", "get_order", "search_orders", 9],
    ].sort((x, y) => (x[0]! < y[0]! ? -1 : 1)));
  }
  const tools = (await get(targets[1]!, "/v1/metrics/tools")) as { as_of: string; tools: { calls: number }[] };
  expect(tools.as_of).toBe(new Date(cronMs).toISOString());
  expect(tools.tools.reduce((n, t) => n + t.calls, 0)).toBeGreaterThan(50);
}, 240_000);
