// Worker entry: wiring only (fetch + scheduled). Export nothing but handlers and Durable Objects.
import { Hono } from "hono";
import type { Env } from "./env.ts";

const app = new Hono<{ Bindings: Env }>();
app.get("/healthz", (c) => c.text("ok"));

export default {
  fetch: app.fetch,
  async scheduled(_controller: ScheduledController, _env: Env, _ctx: ExecutionContext) {},
} satisfies ExportedHandler<Env>;
