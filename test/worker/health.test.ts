import { exports } from "cloudflare:workers";
import { env } from "cloudflare:test";
import { expect, it } from "vitest";

it("serves the health route and has the schema applied", async () => {
  const res = await exports.default.fetch("http://x/healthz");
  expect(await res.text()).toBe("ok");
  const row = await env.DB.prepare("SELECT COUNT(*) AS n FROM call_state").first<{ n: number }>();
  expect(row?.n).toBe(0);
});
