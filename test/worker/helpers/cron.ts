// One cron run as Cloudflare runs it, awaited (SPEC §7): the scheduled handler sends one job per
// database to the rollup queue — here a capturing queue, so nothing runs behind the test's back —
// and the queue's consumer then runs each job, in the worker's own queue() handler.
import { createMessageBatch, createScheduledController, env } from "cloudflare:test";
import worker from "../../../src/worker/index.ts";
import type { Env } from "../../../src/worker/env.ts";
import { ROLLUP_QUEUE_NAME, type DatabaseJobMessage, type RollupJobMessage } from "../../../src/worker/queues/rollup-jobs.ts";
import { capturingQueue } from "./faults.ts";

export const ROLLUP_EVERY_5_MINUTES = "*/5 * * * *";

/**
 * Runs the cron `cron` at `scheduledTime` over `bindings`; answers the database jobs it sent (one per
 * database; the jobs of unfinished project moves run too, and are not in the answer).
 */
export async function runCron(scheduledTime: number = Date.now(), cron: string = ROLLUP_EVERY_5_MINUTES, bindings: Env = env): Promise<DatabaseJobMessage[]> {
  const queue = capturingQueue();
  await worker.scheduled!(createScheduledController({ scheduledTime, cron }), { ...bindings, ROLLUP_QUEUE: queue.queue });
  const jobs = queue.sent as RollupJobMessage[];
  // One message per invocation, as wrangler.toml's max_batch_size = 1 delivers them.
  for (const [i, body] of jobs.entries()) {
    const batch = createMessageBatch(ROLLUP_QUEUE_NAME, [{ id: `job-${i}-${crypto.randomUUID()}`, timestamp: new Date(scheduledTime), attempts: 1, body }]);
    await worker.queue!(batch as never, bindings);
  }
  return jobs.filter((job): job is DatabaseJobMessage => job.kind !== "move");
}
