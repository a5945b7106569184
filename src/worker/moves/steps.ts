// Moving a project between databases online (SPEC §7; docs/scaling.md "Moving a project"): the
// move's steps, each bounded (one page of at most MOVE_PAGE_ROWS rows, one D1 batch per database),
// run by jobs on the rollup queue (queues/rollup-jobs.ts) and continued by the cron. The phases:
//
//   hold → settle → copy (table by table) → guard → switch → grace → drain (table by table) → release →
//   cleanup (table by table) → finished;  before the switch a failure may end in
//   rollback (the target's copy deleted, table by table) → unhold → finished (failed).
//
// Ingest never waits on a move: it writes where the key's state names, and only the directory row
// and that state change, at the switch. The source holds the project from the first step
// (project_holds: its rollup, alert evaluation and delivery leave the project's rows as they are,
// and the admin's alert edits are refused) while its derived rows are copied; its raw requests keep
// arriving in the source meanwhile. The switch points the directory and the keys' objects at the
// target; after a grace period no write can still land in the source, and its raw rows of the
// project are drained into the target as new raw rows, which the target's rollup then folds in.
// Every step is safe to run twice: pages are written with their cursor in one transaction.
import type { Env } from "../env.ts";
import { FIRST_DATABASE, databaseNamed, directoryDb, resolveProjectDatabase } from "../databases.ts";
import { listKeys } from "../db/keys.ts";
import { tablesWithProjectRows } from "../db/projects.ts";
import { readRecompute } from "../db/recomputes.ts";
import {
  COPIED_TABLES,
  DELETED_TABLES,
  DRAINED_TABLES,
  GUARD_CURSOR,
  PENDING_TOOL_VERSIONS,
  callsWatermark,
  claimMove,
  deleteCursorsStatement,
  deletePage,
  findHold,
  findMove,
  holdProject,
  keyOf,
  readCursor,
  readPage,
  releaseHoldStatements,
  releaseMove,
  setHoldRoleStatement,
  setProjectDatabaseStatement,
  tableShape,
  unknownTables,
  updateMoveStatement,
  writePageStatements,
  type HoldRow,
  type MoveChange,
  type MoveRow,
} from "../db/moves.ts";
import { errorName, log } from "../log.ts";
import { withRollupLease } from "../db/rollup-state.ts";

/** Rows one step reads and writes at most: a page of a few hundred rows is one batch well under a second. */
export const MOVE_PAGE_ROWS = 200;
/** …and characters of JSON (call_state and call_batches rows are long): one bound value stays under D1's 2 MB. */
export const MOVE_PAGE_CHARS = 1_000_000;
/**
 * Wait after the source holds the project, before the first copy: an alert evaluation or delivery
 * that read the project's rules or outbox before the hold writes what it decided within this time.
 */
export const MOVE_SETTLE_MS = 60_000;
/**
 * Wait after the switch before the source's raw rows are drained: no write can land in the source
 * after it. A key's object learns the new database at the switch, or at its next refresh (60 s,
 * KEY_STATE_MAX_AGE_MS); a request admitted just before writes within waitUntil's 30 s (its
 * retries, db/raw-writes.ts), and an attempt it abandoned may still commit until D1 stops it (30 s);
 * the ingest queue's consumer resolves the database per message, with one attempt. 60 + 30 + 30 s,
 * with a margin: five minutes, one rollup period.
 */
export const MOVE_GRACE_MS = 5 * 60_000;
/** Failed attempts of a step before the switch after which the move is given up (and rolled back). */
export const MOVE_MAX_FAILURES = 5;
/** Wait before a failed step is tried again. */
export const MOVE_RETRY_MS = 30_000;
/** A job holds the move this long at most (a job that dies lets the next one in after it). */
export const MOVE_LEASE_MS = 120_000;
/**
 * Wait before a step that changes a database's holds is tried again while a rollup run holds that
 * database's lease: a run decides once which projects it leaves alone (rollup/scope.ts), so holds
 * change only between runs.
 */
export const MOVE_ROLLUP_WAIT_MS = 10_000;
/** How long such a step holds the rollup lease at most (a job that dies lets the next run in after it). */
const HOLDS_LEASE_MS = 60_000;
/** Steps one job runs (each ≤ 5 D1 statements: under the 50 per invocation of the free plan). */
export const MOVE_STEPS_PER_JOB = 8;

export type MoveOptions = {
  pageRows?: number;
  pageChars?: number;
  settleMs?: number;
  graceMs?: number;
  maxFailures?: number;
  retryMs?: number;
  maxSteps?: number;
  /** Real time, for the rollup leases (compared with the runs' own). */
  clock?: () => number;
};

const DEFAULTS: Required<MoveOptions> = {
  pageRows: MOVE_PAGE_ROWS,
  pageChars: MOVE_PAGE_CHARS,
  settleMs: MOVE_SETTLE_MS,
  graceMs: MOVE_GRACE_MS,
  maxFailures: MOVE_MAX_FAILURES,
  retryMs: MOVE_RETRY_MS,
  maxSteps: MOVE_STEPS_PER_JOB,
  clock: () => Date.now(),
};

export type MoveJobReport = {
  /** Steps run by this job. */
  steps: number;
  /** The move is finished (done or failed). */
  finished: boolean;
  /** When the move can go on (a wait, or a retry), or null when it can go on at once. */
  waitUntilMs: number | null;
  /** Another job holds the move. */
  busy?: boolean;
};

/** A failure that no retry can mend: the move is given up at once (before the switch). */
class MoveRefused extends Error {
  override name = "MoveRefused";
}

type Context = { env: Env; directory: D1Database; source: D1Database; target: D1Database; o: Required<MoveOptions>; nowMs: number };

/** What a step did: the change of the move's row, and the rows it wrote or deleted. */
type StepResult = { change: MoveChange; rows: number };

/** Runs the move's steps until it waits, finishes, or has run `maxSteps`; never two jobs at once (a lease). */
export async function runMoveSteps(env: Env, moveId: string, nowMs: number, options: MoveOptions = {}): Promise<MoveJobReport> {
  const o = { ...DEFAULTS, ...options };
  const directory = directoryDb(env);
  let move = await claimMove(directory, moveId, nowMs, nowMs + MOVE_LEASE_MS);
  if (!move) {
    const known = await findMove(directory, moveId);
    return { steps: 0, finished: !known || known.finished_at_ms !== null, waitUntilMs: null, busy: !!known && known.finished_at_ms === null };
  }
  const report: MoveJobReport = { steps: 0, finished: false, waitUntilMs: null };
  try {
    const source = databaseNamed(env, move.source);
    const target = databaseNamed(env, move.target);
    if (!source || !target) throw new Error(`the move names a database this worker does not have (${move.source} → ${move.target})`);
    const ctx: Context = { env, directory, source, target, o, nowMs };
    while (report.steps < o.maxSteps && move.finished_at_ms === null) {
      if (move.wait_until_ms > nowMs) {
        report.waitUntilMs = move.wait_until_ms;
        break;
      }
      let change: MoveChange;
      try {
        const result = await runStep(ctx, move);
        change = { ...result.change, steps: move.steps + 1, max_step_rows: Math.max(move.max_step_rows, result.rows), failures: 0 };
        if (move.failures > 0) change.error = null;
      } catch (err) {
        change = failure(move, err, ctx);
        report.steps += 1;
        await updateMoveStatement(directory, move.move_id, change).run();
        move = { ...move, ...change } as MoveRow;
        report.waitUntilMs = move.wait_until_ms > nowMs ? move.wait_until_ms : null;
        break;
      }
      report.steps += 1;
      await updateMoveStatement(directory, move.move_id, change).run();
      move = { ...move, ...change } as MoveRow;
    }
    report.finished = move.finished_at_ms !== null;
    if (!report.finished && report.waitUntilMs === null && move.wait_until_ms > nowMs) report.waitUntilMs = move.wait_until_ms;
  } finally {
    await releaseMove(directory, moveId);
  }
  return report;
}

/** A failed step: retried after a wait; before the switch, given up after maxFailures (or at once when refused) and rolled back. */
function failure(move: MoveRow, err: unknown, ctx: Context): MoveChange {
  const message = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  const failures = move.failures + 1;
  const error = `${move.phase}${move.step_table ? ` ${move.step_table}` : ""}: ${message}`.slice(0, 500);
  log.error("move_step_failed", { move_id: move.move_id, phase: move.phase, table: move.step_table, failures, error: errorName(err) });
  const beforeSwitch = move.state === "copying" || move.state === "switching";
  if (beforeSwitch && (err instanceof MoveRefused || failures >= ctx.o.maxFailures)) {
    return { state: "failed", phase: "rollback", step_table: DELETED_TABLES[0], failures: 0, error, wait_until_ms: 0 };
  }
  return { failures, error, wait_until_ms: ctx.nowMs + ctx.o.retryMs };
}

async function runStep(ctx: Context, move: MoveRow): Promise<StepResult> {
  switch (move.phase) {
    case "hold":
      return hold(ctx, move);
    case "settle":
      return { change: { phase: "copy", step_table: COPIED_TABLES[0] }, rows: 0 };
    case "copy":
      return copyPage(ctx, move, "copy");
    case "guard":
      return copyPage(ctx, move, "guard");
    case "switch":
      return switchOver(ctx, move);
    case "grace":
      return { change: { phase: "drain", step_table: DRAINED_TABLES[0] }, rows: 0 };
    case "drain":
      return copyPage(ctx, move, "drain");
    case "release":
      return release(ctx, move);
    case "cleanup":
      return deleteStep(ctx, move, ctx.source, move.source);
    case "rollback":
      return deleteStep(ctx, move, ctx.target, move.target);
    case "unhold":
      return unhold(ctx, move);
    case "finished":
      return { change: { finished_at_ms: ctx.nowMs }, rows: 0 };
  }
}

/**
 * Runs `job`, which changes `db`'s holds, while no rollup run works on `db` (its lease: runs decide
 * once which projects they leave alone, rollup/scope.ts); false when one does (the step waits).
 */
async function changingHolds(ctx: Context, move: MoveRow, db: D1Database, job: () => Promise<void>): Promise<boolean> {
  return (await withRollupLease(db, `move:${move.move_id}`, ctx.o.clock(), HOLDS_LEASE_MS, job)) !== null;
}

/** The step again once the rollup run that holds the lease may be done. */
const waitForRollup = (ctx: Context): StepResult => ({ change: { wait_until_ms: ctx.nowMs + MOVE_ROLLUP_WAIT_MS }, rows: 0 });

/** The source holds the project (with its watermarks), the target holds it too; then the settle wait. */
async function hold(ctx: Context, move: MoveRow): Promise<StepResult> {
  const unknown = unknownTables(await tablesWithProjectRows(ctx.source));
  if (unknown.length > 0) throw new MoveRefused(`no move rule for table ${unknown.join(", ")}`);
  // The rollback deletes the project's rows in the target: only ever where the project does not live.
  if ((await resolveProjectDatabase(ctx.env, move.project_id)).name !== move.source) throw new MoveRefused("the project is no longer in the source database");
  const recompute = await readRecompute(ctx.source, move.project_id);
  if (recompute && recompute.state !== "done") throw new MoveRefused("a recompute of the project is under way");
  // One database at a time: a hold taken is kept when the step waits or is run again.
  for (const [db, role] of [[ctx.source, "source"], [ctx.target, "target"]] as const) {
    if (!(await changingHolds(ctx, move, db, async () => void (await holdProject(db, move.project_id, move.move_id, role))))) return waitForRollup(ctx);
  }
  return { change: { phase: "settle", wait_until_ms: ctx.nowMs + ctx.o.settleMs }, rows: 0 };
}

function nextTable(list: readonly string[], table: string): string | null {
  const at = list.indexOf(table);
  if (at < 0) throw new Error(`no table ${table} in this phase`);
  return list[at + 1] ?? null;
}

/** The rows of a page that fit its characters: at least one, then as many as fit. */
function fitting(page: unknown[][], maxChars: number): unknown[][] {
  let chars = 0;
  let taken = 0;
  for (const row of page) {
    chars += JSON.stringify(row).length + 1;
    if (taken > 0 && chars > maxChars) break;
    taken += 1;
  }
  return page.slice(0, taken);
}

/**
 * One page of a copied (or drained) table into the target, with its cursor; the next table when it
 * is all there. `guard`: the batch ids of the source's call_batches rows, as emptied rows.
 */
async function copyPage(ctx: Context, move: MoveRow, kind: "copy" | "guard" | "drain"): Promise<StepResult> {
  const guard = kind === "guard";
  const versions = move.step_table === PENDING_TOOL_VERSIONS;
  const table = guard ? "call_batches" : versions ? "raw_startups" : move.step_table!;
  const cursorName = guard ? GUARD_CURSOR : move.step_table!;
  const shape = await tableShape(ctx.source, table);
  const { cursor, rows: copied } = await readCursor(ctx.target, move.move_id, cursorName);
  let fence = 0;
  let upTo: number | undefined;
  if (versions || (kind === "drain" && (table === "raw_startups" || table === "raw_agreements"))) {
    const hold = await sourceHold(ctx, move);
    // Folded in the source but not counted in tool_versions: (tool_versions_seq, startups_seq] at the hold.
    if (versions) [fence, upTo] = [hold.tool_versions_seq, hold.startups_seq];
    else fence = table === "raw_startups" ? hold.startups_seq : hold.agreements_seq;
  }
  const keyless = shape.key.length === 0;
  const page = keyless && cursor !== null ? [] : await readPage(ctx.source, { table, shape, projectId: move.project_id, cursor, limit: ctx.o.pageRows, nowMs: ctx.nowMs, fence, upTo, guard });
  const rows = fitting(page, ctx.o.pageChars);
  if (rows.length === 0) {
    if (kind === "guard") return { change: { phase: "switch", step_table: null }, rows: 0 };
    const next = nextTable(kind === "copy" ? COPIED_TABLES : DRAINED_TABLES, move.step_table!);
    if (next) return { change: { step_table: next }, rows: 0 };
    return kind === "copy"
      ? { change: { state: "switching", phase: "guard", step_table: null }, rows: 0 }
      : { change: { phase: "release", step_table: null }, rows: 0 };
  }
  const counts = JSON.parse(move.counts_json) as Record<string, number>;
  counts[cursorName] = copied + rows.length;
  const next = keyOf(shape, rows.at(-1)!);
  await ctx.target.batch(writePageStatements(ctx.target, { moveId: move.move_id, table, shape, rows, previous: cursor, next, guard, versions }));
  return { change: { counts_json: JSON.stringify(counts) }, rows: rows.length };
}

/** The source's hold: the watermarks it recorded say which raw rows of the project were never folded (or counted) there. */
async function sourceHold(ctx: Context, move: MoveRow): Promise<HoldRow> {
  const hold = await findHold(ctx.source, move.project_id);
  if (!hold || hold.move_id !== move.move_id) throw new Error("the source no longer holds the project");
  return hold;
}

/**
 * The switch, in one directory transaction: the directory names the target, and the move is
 * draining from now on (reads answer from the target). Then every ingest key's object is told (a
 * key whose object is not reached learns it at its next refresh, within the grace period).
 */
async function switchOver(ctx: Context, move: MoveRow): Promise<StepResult> {
  // The guard rows of what ingest wrote into the source since the guard pages: its new rows (a
  // page at most: with more, this step copies them and the switch waits for the next one), and its
  // open rows again (ingest appends requests to them).
  const shape = await tableShape(ctx.source, "call_batches");
  const { cursor, rows: guarded } = await readCursor(ctx.target, move.move_id, GUARD_CURSOR);
  const query = { table: "call_batches", shape, projectId: move.project_id, limit: ctx.o.pageRows, nowMs: ctx.nowMs, guard: true };
  const page = await readPage(ctx.source, { ...query, cursor });
  const fresh = fitting(page, ctx.o.pageChars);
  const counts = JSON.parse(move.counts_json) as Record<string, number>;
  if (fresh.length === ctx.o.pageRows || fresh.length < page.length) {
    counts[GUARD_CURSOR] = guarded + fresh.length;
    await ctx.target.batch(writePageStatements(ctx.target, { moveId: move.move_id, table: "call_batches", shape, rows: fresh, previous: cursor, next: keyOf(shape, fresh.at(-1)!), guard: true }));
    return { change: { counts_json: JSON.stringify(counts) }, rows: fresh.length };
  }
  const seen = new Set(fresh.map((row) => JSON.stringify(keyOf(shape, row))));
  const open = cursor === null ? [] : (await readPage(ctx.source, { ...query, cursor: null, open: true })).filter((row) => !seen.has(JSON.stringify(keyOf(shape, row))));
  const rows = fitting([...fresh, ...open], ctx.o.pageChars);
  if (rows.length > 0) {
    counts[GUARD_CURSOR] = guarded + rows.length;
    const next = fresh.length > 0 ? keyOf(shape, fresh.at(-1)!) : cursor!;
    await ctx.target.batch(writePageStatements(ctx.target, { moveId: move.move_id, table: "call_batches", shape, rows, previous: cursor, next, guard: true }));
  }
  const callsSeq = await callsWatermark(ctx.source);
  const change: MoveChange = {
    state: "draining", phase: "grace", source_calls_seq: callsSeq, switched_at_ms: ctx.nowMs, wait_until_ms: ctx.nowMs + ctx.o.graceMs, counts_json: JSON.stringify(counts),
  };
  await ctx.directory.batch([setProjectDatabaseStatement(ctx.directory, move.project_id, move.target), updateMoveStatement(ctx.directory, move.move_id, change)]);
  const keys = await listKeys(ctx.directory, move.project_id);
  await Promise.all(
    keys
      .filter((k) => k.kind === "ingest" && k.revoked_at_ms === null)
      .map(async (k) => {
        try {
          await ctx.env.KEY_BUDGET.get(ctx.env.KEY_BUDGET.idFromName(k.key_id)).moveTo(move.target);
        } catch (err) {
          log.error("move_key_not_told", { move_id: move.move_id, key_id: k.key_id, error: errorName(err) });
        }
      }),
  );
  return { change, rows: rows.length };
}

/** The target folds the project from now on (its raw rows renumbered in receive order); the source's rows are deleted next. */
async function release(ctx: Context, move: MoveRow): Promise<StepResult> {
  const hold = await findHold(ctx.target, move.project_id);
  if (hold && hold.move_id === move.move_id) {
    // Every raw row of the project in the target arrived after the hold: all are renumbered.
    const released = await changingHolds(ctx, move, ctx.target, async () =>
      void (await ctx.target.batch(releaseHoldStatements(ctx.target, { ...hold, startups_seq: 0, agreements_seq: 0, tool_versions_seq: 0 }, { callsSeq: move.source_calls_seq ?? 0 }))));
    if (!released) return waitForRollup(ctx);
  }
  await setHoldRoleStatement(ctx.source, move.project_id, move.move_id, "leaving").run();
  return { change: { phase: "cleanup", step_table: DELETED_TABLES[0] }, rows: 0 };
}

/**
 * Deletes a page of the project's rows of one table in `db` (the source after the move, the target
 * after a failed one); when all are gone, the project row (outside the first database, where the
 * directory keeps it), the hold and the cursors.
 */
async function deleteStep(ctx: Context, move: MoveRow, db: D1Database, name: string): Promise<StepResult> {
  const table = move.step_table;
  if (table) {
    const shape = await tableShape(db, table);
    const deleted = await deletePage(db, table, shape, move.project_id, ctx.o.pageRows);
    if (deleted > 0) return { change: {}, rows: deleted };
    return { change: { step_table: nextTable(DELETED_TABLES, table) }, rows: 0 };
  }
  const statements = [db.prepare("DELETE FROM project_holds WHERE project_id = ?1 AND move_id = ?2").bind(move.project_id, move.move_id)];
  if (name !== FIRST_DATABASE) statements.push(db.prepare("DELETE FROM projects WHERE project_id = ?1").bind(move.project_id));
  if (move.phase === "cleanup") {
    await db.batch(statements);
    await deleteCursorsStatement(ctx.target, move.move_id).run();
    return { change: { state: "done", phase: "finished", finished_at_ms: ctx.nowMs }, rows: 0 };
  }
  // A failed move: the target's copy is gone; the source lets the project go on.
  statements.push(deleteCursorsStatement(db, move.move_id));
  await db.batch(statements);
  return { change: { phase: "unhold" }, rows: 0 };
}

/** A failed move gives the project back to the source's rollup: what the hold kept from being folded is numbered above the watermarks again. */
async function unhold(ctx: Context, move: MoveRow): Promise<StepResult> {
  const hold = await findHold(ctx.source, move.project_id);
  if (hold && hold.move_id === move.move_id) {
    const released = await changingHolds(ctx, move, ctx.source, async () => void (await ctx.source.batch(releaseHoldStatements(ctx.source, hold, null))));
    if (!released) return waitForRollup(ctx);
  }
  return { change: { phase: "finished", finished_at_ms: ctx.nowMs }, rows: 0 };
}
