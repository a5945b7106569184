// Worker entry: wiring only (fetch + scheduled + queue). Export nothing but handlers and Durable Objects.
import { runAlertStep } from "./alerts/index.ts";
import { app } from "./app.ts";
import type { Env } from "./env.ts";
import { INGEST_DEAD_LETTER_QUEUE_NAME, consumeDeadLetters } from "./queues/ingest-dead-letters.ts";
import { consumeIngestWrites } from "./queues/ingest-writes.ts";
import { handleScheduled } from "./rollup/index.ts";

export { KeyBudget } from "./budget/key-budget.ts";
export { IngestHealth } from "./health/ingest-health.ts";
export { SignInThrottle } from "./throttle/sign-in-throttle.ts";

export default {
  fetch: app.fetch,
  scheduled: async (controller, env) => {
    const rollup = await handleScheduled(controller, env);
    // After the rollup has committed; the alert step never throws (SPEC §5).
    if (rollup) await runAlertStep(env, controller.scheduledTime, rollup);
  },
  queue: async (batch, env) => {
    if (batch.queue === INGEST_DEAD_LETTER_QUEUE_NAME) await consumeDeadLetters(batch, env);
    else await consumeIngestWrites(batch, env);
  },
} satisfies ExportedHandler<Env>;
