// Worker entry: wiring only (fetch + scheduled + queue). Export nothing but handlers and Durable Objects.
import { edgeFetch } from "./edge.ts";
import type { Env } from "./env.ts";
import { queueInvocationId, scheduledInvocationId, withLogScope } from "./log.ts";
import { INGEST_DEAD_LETTER_QUEUE_NAME, consumeDeadLetters } from "./queues/ingest-dead-letters.ts";
import { consumeIngestWrites } from "./queues/ingest-writes.ts";
import { ROLLUP_QUEUE_NAME, consumeRollupJobs, fanOutScheduled } from "./queues/rollup-jobs.ts";

export { KeyBudget } from "./budget/key-budget.ts";
export { IngestHealth } from "./health/ingest-health.ts";
export { SignInThrottle } from "./throttle/sign-in-throttle.ts";

export default {
  // The app behind OAuth 2.1 for /mcp (edge.ts, SPEC §9).
  fetch: edgeFetch,
  // One job per database (SPEC §7): the rollup and its alert step, or the retention. Each trigger
  // and each queue delivery logs under its own id (log.ts), as a request does under its own.
  scheduled: async (controller, env) => {
    await withLogScope({ invocation_id: scheduledInvocationId(controller.cron, controller.scheduledTime) }, () => fanOutScheduled(controller, env));
  },
  queue: async (batch, env) => {
    await withLogScope({ invocation_id: queueInvocationId(batch) }, async () => {
      if (batch.queue === INGEST_DEAD_LETTER_QUEUE_NAME) await consumeDeadLetters(batch, env);
      else if (batch.queue === ROLLUP_QUEUE_NAME) await consumeRollupJobs(batch, env);
      else await consumeIngestWrites(batch, env);
    });
  },
} satisfies ExportedHandler<Env>;
