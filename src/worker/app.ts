// The Hono app: one error model for the whole API, and the route groups mounted on it.
import { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import type { Env } from "./env.ts";

export type AppEnv = { Bindings: Env };

export const app = new Hono<AppEnv>();

app.get("/healthz", (c) => c.text("ok"));

// Every error body is {"error": string}; anything unexpected is a bare 500 (SPEC §1.1): never a
// stack trace, never input echoed back.
app.onError((err, c) => {
  if (err instanceof HTTPException) {
    const res = err.getResponse();
    const headers = new Headers(res.headers);
    headers.set("content-type", "application/json");
    return new Response(JSON.stringify({ error: err.message || "error" }), { status: err.status, headers });
  }
  console.error(JSON.stringify({ event: "unhandled_error", name: err?.name ?? "Error" }));
  return c.json({ error: "internal error" }, 500);
});

app.notFound((c) => c.json({ error: "not found" }, 404));
