// Moving a project between databases online (SPEC §7; docs/scaling.md "Moving a project"): hold →
// settle → copy → guard → switch → grace → drain → release → cleanup; before the switch a failure
// rolls back → unhold.
// Ingest never waits on a move. Every step is safe to run twice: pages are written with their
// cursor in one transaction.
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

/** Keeps one step's batch short. */
export const MOVE_PAGE_ROWS = 200;
/** call_state and call_batches rows are long: one bound value stays under D1's 2 MB. */
export const MOVE_PAGE_CHARS = 1_000_000;
/**
 * An evaluation or delivery that read the rules or outbox before the hold writes its decision
 * within this time.
 */
export const MOVE_SETTLE_MS = 60_000;
/**
 * No write can land in the source after it: key state refresh (60 s, KEY_STATE_MAX_AGE_MS) +
 * waitUntil's 30 s of retries + D1's 30 s statement limit, with a margin: one rollup period.
 */
export const MOVE_GRACE_MS = 5 * 60_000;
/** Failed attempts of a step before the switch after which the move is given up (and rolled back). */
export const MOVE_MAX_FAILURES = 5;
export const MOVE_RETRY_MS = 30_000;
/** A job that dies lets the next one in after it. */
export const MOVE_LEASE_MS = 120_000;
/**
 * A run decides once which projects it leaves alone (rollup/scope.ts), so holds change only between
 * runs.
 */
export const MOVE_ROLLUP_WAIT_MS = 10_000;
/** A job that dies lets the next run in after it. */
const HOLDS_LEASE_MS = 60_000;
/** Each step ≤ 5 D1 statements: under the free plan's 50 per invocation. */
export const MOVE_STEPS_PER_JOB = 8;

export type MoveOptions = {
  pageRows?: number;
  pageChars?: number;
  settleMs?: number;
  graceMs?: number;
  maxFailures?: number;
  retryMs?: number;
  maxSteps?: number;
  /** Real time: compared with the runs' own leases. */
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
  steps: number;
  finished: boolean;
  /** When the move can go on (a wait, or a retry), or null when it can go on at once. */
  waitUntilMs: number | null;
  busy?: boolean;
};

/** A failure that no retry can mend: the move is given up at once (before the switch). */
class MoveRefused extends Error {
  override name = "MoveRefused";
}

type Context = { env: Env; directory: D1Database; source: D1Database; target: D1Database; o: Required<MoveOptions>; nowMs: number };

type StepResult = { change: MoveChange; rows: number };

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
 * Runs decide once which projects they leave alone (rollup/scope.ts); false when one holds the
 * lease.
 */
async function changingHolds(ctx: Context, move: MoveRow, db: D1Database, job: () => Promise<void>): Promise<boolean> {
  return (await withRollupLease(db, `move:${move.move_id}`, ctx.o.clock(), HOLDS_LEASE_MS, job)) !== null;
}

const waitForRollup = (ctx: Context): StepResult => ({ change: { wait_until_ms: ctx.nowMs + MOVE_ROLLUP_WAIT_MS }, rows: 0 });

async function hold(ctx: Context, move: MoveRow): Promise<StepResult> {
  const unknown = unknownTables(await tablesWithProjectRows(ctx.source));
  if (unknown.length > 0) throw new MoveRefused(`no move rule for table ${unknown.join(", ")}`);
  // The rollback deletes the target's rows: only ever where the project does not live.
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

/** At least one, so a page always advances. */
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

/** `guard`: the source's call_batches ids, as emptied rows. */
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

async function sourceHold(ctx: Context, move: MoveRow): Promise<HoldRow> {
  const hold = await findHold(ctx.source, move.project_id);
  if (!hold || hold.move_id !== move.move_id) throw new Error("the source no longer holds the project");
  return hold;
}

/** A key's object not reached here learns the switch at its next refresh, within the grace period. */
async function switchOver(ctx: Context, move: MoveRow): Promise<StepResult> {
  // Ingest kept writing into the source since the guard pages; with more than a page, the switch
  // waits for the next step.
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

/** The project row stays in the first database, where the directory keeps it. */
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

/** What the hold kept from being folded is renumbered above the watermarks. */
async function unhold(ctx: Context, move: MoveRow): Promise<StepResult> {
  const hold = await findHold(ctx.source, move.project_id);
  if (hold && hold.move_id === move.move_id) {
    const released = await changingHolds(ctx, move, ctx.source, async () => void (await ctx.source.batch(releaseHoldStatements(ctx.source, hold, null))));
    if (!released) return waitForRollup(ctx);
  }
  return { change: { phase: "finished", finished_at_ms: ctx.nowMs }, rows: 0 };
}
