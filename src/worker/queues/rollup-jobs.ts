// The rollup queue (SPEC §7: rollups per database, each with its own statement budget): producer
// and consumer in one module. The cron sends one message per database; each message is consumed in
// its own invocation (max_batch_size = 1, wrangler.toml), so every database gets a whole
// invocation's D1 budget, and one database's failure or backlog never delays another's rollup.
// A job is idempotent (the rollup works behind its watermarks), so a redelivery is harmless.
import { z } from "zod";
import type { Env } from "../env.ts";
import { databases } from "../databases.ts";
import { jobKindOf, runDatabaseJob, type DatabaseJob } from "../rollup/index.ts";

/** The queue's name in wrangler.toml (the worker's `queue()` tells its queues apart by name). */
export const ROLLUP_QUEUE_NAME = "mcpulse-rollup";

export const RollupJobMessage = z.object({
  v: z.literal(1),
  kind: z.enum(["rollup", "retention"]),
  /** The database's binding name (databases.ts). */
  database: z.string().min(1).max(64),
  /** The cron's scheduled time: the job's clock. */
  scheduled_time_ms: z.number().int().nonnegative(),
});
export type RollupJobMessage = z.infer<typeof RollupJobMessage>;

export function jobMessage(job: DatabaseJob): RollupJobMessage {
  return { v: 1, kind: job.kind, database: job.database, scheduled_time_ms: job.scheduledTimeMs };
}

/** Runs a job, logging (never throwing) a failure: one database's failure stops nothing else. */
async function runLogged(env: Env, job: DatabaseJob): Promise<boolean> {
  try {
    await runDatabaseJob(env, job);
    return true;
  } catch (err) {
    console.error(JSON.stringify({ event: "rollup_job_failed", kind: job.kind, database: job.database, error: err instanceof Error ? err.name : typeof err }));
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
  try {
    await env.ROLLUP_QUEUE.sendBatch(jobs.map((job) => ({ body: jobMessage(job) })));
  } catch (err) {
    console.error(JSON.stringify({ event: "rollup_queue_unavailable", jobs: jobs.length, error: err instanceof Error ? err.name : typeof err }));
    for (const job of jobs) await runLogged(env, job);
  }
  return jobs;
}

/**
 * The consumer: each message is one database's job. It is acknowledged whether it succeeded or
 * not — the next cron run does the same work again from the watermarks, so retrying an old job
 * would only repeat it with an older clock. A message that does not parse is logged and dropped.
 */
export async function consumeRollupJobs(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  for (const message of batch.messages) {
    const parsed = RollupJobMessage.safeParse(message.body);
    if (!parsed.success) {
      console.error(JSON.stringify({ event: "rollup_job_invalid", id: message.id }));
    } else {
      await runLogged(env, { kind: parsed.data.kind, database: parsed.data.database, scheduledTimeMs: parsed.data.scheduled_time_ms });
    }
    message.ack();
  }
}
