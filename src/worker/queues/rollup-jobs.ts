// The rollup queue (SPEC §7): one message per database, one invocation each (max_batch_size = 1), so
// each database gets a whole invocation's D1 budget and none delays another. Jobs are idempotent
// (watermarks). Move jobs re-send themselves; the cron re-sends unfinished ones, so none is stranded.
import { z } from "zod";
import type { Env } from "../env.ts";
import { runAlertStep } from "../alerts/index.ts";
import { databaseNamed, databases, directoryDb } from "../databases.ts";
import { unfinishedMoveIds } from "../db/moves.ts";
import { runMoveSteps, type MoveOptions } from "../moves/steps.ts";
import { RETENTION_CRON, ROLLUP_CRON, parseMaxQueries, parsePauseMs, parseRetentionDays, runRetention, runRollup } from "../rollup/index.ts";
import { errorName, log, withLogScope } from "../log.ts";

/** The queue's name in wrangler.toml (the worker's `queue()` tells its queues apart by name). */
export const ROLLUP_QUEUE_NAME = "mcpulse-rollup";

export const DatabaseJobMessage = z.object({
  v: z.literal(1),
  kind: z.enum(["rollup", "retention"]),
  /** The database's binding name (databases.ts). */
  database: z.string().min(1).max(64),
  /** The cron's scheduled time: the job's clock. */
  scheduled_time_ms: z.number().int().nonnegative(),
});
/** A move's next steps (moves/steps.ts); its clock is the cron's scheduled time when the cron sent it, else the time it runs. */
export const MoveJobMessage = z.object({
  v: z.literal(1),
  kind: z.literal("move"),
  move_id: z.string().min(1).max(64),
  scheduled_time_ms: z.number().int().nonnegative().optional(),
});
export type MoveJobMessage = z.infer<typeof MoveJobMessage>;
export type DatabaseJobMessage = z.infer<typeof DatabaseJobMessage>;
export const RollupJobMessage = z.discriminatedUnion("kind", [DatabaseJobMessage, MoveJobMessage]);
export type RollupJobMessage = z.infer<typeof RollupJobMessage>;

export function jobMessage(job: DatabaseJob): DatabaseJobMessage {
  return { v: 1, kind: job.kind, database: job.database, scheduled_time_ms: job.scheduledTimeMs };
}

/** One database's share of a cron run. */
export type DatabaseJob = { kind: "rollup" | "retention"; database: string; scheduledTimeMs: number };

/** The job kind of a cron trigger, or null for a cron this worker does not know (logged). */
export function jobKindOf(cron: string): DatabaseJob["kind"] | null {
  if (cron === RETENTION_CRON) return "retention";
  // A manual trigger without a cron (`wrangler dev --test-scheduled`, `/__scheduled`) runs the
  // rollup: it is idempotent, so an extra run is always safe.
  if (cron === ROLLUP_CRON || cron === "") return "rollup";
  log.error("unknown_cron", { cron });
  return null;
}

/**
 * One database's job: its handle resolved once here, from the job's database name, then the rollup
 * run and the alert step of that database's projects in what is left of the invocation's budget
 * (it never throws), or the retention. Throws only what the rollup or the retention throws.
 */
export async function runDatabaseJob(env: Env, job: DatabaseJob): Promise<void> {
  const db = databaseNamed(env, job.database);
  if (!db) {
    log.error("rollup_job_unknown_database", { database: job.database });
    return;
  }
  const now = job.scheduledTimeMs;
  if (job.kind === "retention") {
    const r = await runRetention(db, now, { retentionDays: parseRetentionDays(env.RAW_RETENTION_DAYS) });
    log.info("retention", { database: job.database, ...r });
    return;
  }
  const r = await runRollup(db, now, { maxQueries: parseMaxQueries(env.ROLLUP_MAX_QUERIES), pauseMs: parsePauseMs(env.ROLLUP_PAUSE_MS) });
  if (r.leaseHeld) {
    // Another rollup job of this database is still running: it does the work (and the alert step after it).
    log.info("rollup_lease_held", { database: job.database });
    return;
  }
  log.info("rollup", { database: job.database, ...r });
  // After the rollup has committed; the alert step never throws (SPEC §5).
  await runAlertStep(env, db, now, r);
}

/** Longest delay the queue allows for a message (Cloudflare Queues: 12 hours). */
const MAX_QUEUE_DELAY_SECONDS = 43_200;

/**
 * Runs a move's next steps, then sends its job again: at once when it can go on, delayed until its
 * wait ends otherwise (a failed send is logged: the cron continues the move). Never throws.
 */
export async function runMoveJob(env: Env, moveId: string, nowMs: number, options: MoveOptions = {}): Promise<void> {
  try {
    const r = await runMoveSteps(env, moveId, nowMs, options);
    log.info("move_steps", { move_id: moveId, ...r });
    if (r.finished || r.busy) return;
    const delaySeconds = r.waitUntilMs === null ? 0 : Math.min(MAX_QUEUE_DELAY_SECONDS, Math.max(1, Math.ceil((r.waitUntilMs - nowMs) / 1000)));
    await sendMoveJob(env, moveId, delaySeconds);
  } catch (err) {
    log.error("move_job_failed", { move_id: moveId, error: errorName(err) });
  }
}

/** Sends a move's job (logged, never thrown, when the queue refuses: the cron sends it again within 5 minutes). */
export async function sendMoveJob(env: Env, moveId: string, delaySeconds = 0): Promise<void> {
  const body: MoveJobMessage = { v: 1, kind: "move", move_id: moveId };
  try {
    await env.ROLLUP_QUEUE.send(body, delaySeconds > 0 ? { delaySeconds } : undefined);
  } catch (err) {
    log.error("rollup_queue_unavailable", { jobs: 1, move_id: moveId, error: errorName(err) });
  }
}

/** Runs a job, logging (never throwing) a failure: one database's failure stops nothing else. */
async function runLogged(env: Env, job: DatabaseJob): Promise<boolean> {
  try {
    await runDatabaseJob(env, job);
    return true;
  } catch (err) {
    log.error("rollup_job_failed", { kind: job.kind, database: job.database, error: errorName(err) });
    return false;
  }
}

/**
 * The scheduled handler: one job per database, sent to the rollup queue. If the queue refuses, the
 * jobs run here, one after the other, each failure logged and the next one still run (they then
 * share this invocation's budget: a degraded mode, logged).
 */
export async function fanOutScheduled(controller: ScheduledController, env: Env): Promise<DatabaseJob[]> {
  const kind = jobKindOf(controller.cron);
  if (!kind) return [];
  const jobs = databases(env).map((d): DatabaseJob => ({ kind, database: d.name, scheduledTimeMs: controller.scheduledTime }));
  // The 5-minute run continues every unfinished move (a job that finds the move busy or waiting does nothing).
  let moves: string[] = [];
  if (kind === "rollup") {
    try {
      moves = await unfinishedMoveIds(directoryDb(env));
    } catch (err) {
      log.error("moves_unreadable", { error: errorName(err) });
    }
  }
  const moveJobs = moves.map((moveId): MoveJobMessage => ({ v: 1, kind: "move", move_id: moveId, scheduled_time_ms: controller.scheduledTime }));
  try {
    await env.ROLLUP_QUEUE.sendBatch([...jobs.map((job) => ({ body: jobMessage(job) })), ...moveJobs.map((body) => ({ body }))]);
  } catch (err) {
    log.error("rollup_queue_unavailable", { jobs: jobs.length + moveJobs.length, error: errorName(err) });
    for (const job of jobs) await runLogged(env, job);
    for (const moveId of moves) await runMoveSteps(env, moveId, controller.scheduledTime).catch(() => undefined);
  }
  return jobs;
}

/**
 * The consumer: one message, one database's job, acknowledged even on failure — the next cron run
 * redoes it from the watermarks with a newer clock. Unparsable messages are logged and dropped.
 */
export async function consumeRollupJobs(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  for (const message of batch.messages) {
    await withLogScope({ invocation_id: message.id }, async () => {
      const parsed = RollupJobMessage.safeParse(message.body);
      if (!parsed.success) {
        log.error("rollup_job_invalid", { id: message.id });
      } else if (parsed.data.kind === "move") {
        await runMoveJob(env, parsed.data.move_id, parsed.data.scheduled_time_ms ?? Date.now());
      } else {
        await runLogged(env, { kind: parsed.data.kind, database: parsed.data.database, scheduledTimeMs: parsed.data.scheduled_time_ms });
      }
    });
    message.ack();
  }
}
