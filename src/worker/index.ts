// Worker entry: wiring only (fetch + scheduled). Export nothing but handlers and Durable Objects.
import { app } from "./app.ts";
import type { Env } from "./env.ts";
import { handleScheduled } from "./rollup/index.ts";

export { KeyBudget } from "./budget/key-budget.ts";

export default {
  fetch: app.fetch,
  scheduled: (controller, env) => handleScheduled(controller, env),
} satisfies ExportedHandler<Env>;
