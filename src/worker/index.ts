// Worker entry: wiring only (fetch + scheduled). Export nothing but handlers and Durable Objects.
import { app } from "./app.ts";
import type { Env } from "./env.ts";

export { KeyBudget } from "./budget/key-budget.ts";

export default {
  fetch: app.fetch,
  async scheduled(_controller: ScheduledController, _env: Env, _ctx: ExecutionContext) {},
} satisfies ExportedHandler<Env>;
