// Through the real worker: ingest → the 5-minute cron (rollup, evaluation) → states and outbox
// (SPEC §5). Figures are compared with what the read API answers over the same calls.
import { env } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { callPayload, postIngest } from "../helpers/ingest.ts";
import { createProject } from "../helpers/projects.ts";
import { createDestination, createRule, outboxOf, runCron, statesOf } from "./helpers.ts";

const MINUTE = 60_000;
const iso = (ms: number) => new Date(ms).toISOString();

async function ingestCalls(key: string, startMs: number, outcomes: string[], overrides: Record<string, unknown> = {}) {
  const batch = outcomes.map((outcome, i) =>
    callPayload({ started_at: iso(startMs + i * 1000), outcome, args_hash: (i.toString(16) + "000000000000").slice(0, 12), session_id: `s_${i}`, ...overrides }),
  );
  const res = await postIngest({ batch }, { key });
  expect(res.status).toBe(202);
}

describe("alert evaluation after the rollup", () => {
  it("goes ok → pending → firing → ok, queues one notification per transition and destination, with the read API's figure", async () => {
    const project = await createProject("alerts e2e");
    const hook = await createDestination(project.project_id, { kind: "webhook", url: "https://hooks.example.com/hook" });
    const slack = await createDestination(project.project_id, { kind: "slack", url: "https://hooks.example.com/services/T0/B0/abcdefgh" });
    const rule = await createRule(project.project_id, {
      metric: "error_rate", op: ">", threshold: 0.1, tool: "*", min_calls: 5, repeat_hours: 1, destinations: [hook.id, slack.id],
    });
    // Delivery is the e2e test's subject (a real receiver). Here the stored URLs now point at the
    // metadata address (as a name whose target changed would): the check before every attempt refuses
    // them, so every attempt fails as invalid_target without a request leaving the worker.
    await env.DB.prepare("UPDATE alert_destinations SET url = 'https://[::ffff:a9fe:a9fe]/latest/meta-data/' WHERE project_id = ?1").bind(project.project_id).run();
    const t0 = Date.now();
    await ingestCalls(project.ingest_key, t0 - 10 * MINUTE, ["ok", "ok", "ok", "tool_error", "crashed", "bad_args", "ok"]);

    await runCron(t0);
    let states = await statesOf(project.project_id);
    expect(states.map((s) => [s.scope_tool, s.state, s.breaches])).toEqual([["search_orders", "pending", 1]]);
    expect(await outboxOf(project.project_id)).toEqual([]);

    await runCron(t0 + 5 * MINUTE);
    states = await statesOf(project.project_id);
    expect(states.map((s) => [s.scope_tool, s.state])).toEqual([["search_orders", "firing"]]);
    let outbox = await outboxOf(project.project_id);
    expect(outbox.map((o) => [o.kind, o.destination_id])).toEqual([["firing", hook.id], ["firing", slack.id]]);
    const payload = JSON.parse(outbox[0]!.payload_json);
    expect(payload).toMatchObject({ kind: "firing", state: "firing", metric: "error_rate", op: ">", threshold: 0.1, scope: { tool: "search_orders", client: null }, rule: { id: rule.id } });

    // The figure is the read API's error_rate over the same calls (rounded to 4 decimals there too).
    const day = iso(t0).slice(0, 10);
    const yesterday = iso(t0 - 86_400_000).slice(0, 10);
    const read = await exports.default.fetch(`http://worker/v1/metrics/tools?from=${yesterday}&to=${day}`, { headers: { authorization: `Bearer ${project.read_key}` } });
    const tools = (await read.json<{ tools: { tool_name: string; error_rate: number }[] }>()).tools;
    expect(payload.value).toBe(tools.find((t) => t.tool_name === "search_orders")!.error_rate);
    expect(payload.value).toBe(0.4286);

    // Still breaching, reminder not due yet: nothing new.
    await runCron(t0 + 10 * MINUTE);
    expect(await outboxOf(project.project_id)).toHaveLength(2);

    // An hour after firing: one reminder per destination.
    await runCron(t0 + 65 * MINUTE);
    outbox = await outboxOf(project.project_id);
    expect(outbox.map((o) => o.kind)).toEqual(["firing", "firing", "reminder", "reminder"]);

    // Enough good calls bring the rate to 3/30 = 0.1, which is not > 0.1: resolved, once.
    await ingestCalls(project.ingest_key, t0 - 5 * MINUTE, Array(23).fill("ok"), { session_id: "s_more" });
    await runCron(t0 + 70 * MINUTE);
    await runCron(t0 + 75 * MINUTE);
    outbox = await outboxOf(project.project_id);
    expect(outbox.map((o) => o.kind)).toEqual(["firing", "firing", "reminder", "reminder", "resolved", "resolved"]);
    expect(JSON.parse(outbox[4]!.payload_json)).toMatchObject({ state: "ok", value: 0.1 });
    states = await statesOf(project.project_id);
    expect(states.map((s) => [s.state, s.breaches])).toEqual([["ok", 0]]);
    // Every attempt is in the delivery log the read key sees.
    const log = await exports.default.fetch("http://worker/v1/metrics/alerts", { headers: { authorization: `Bearer ${project.read_key}` } });
    const body = await log.json<{ rules: { id: string; states: { state: string }[] }[]; deliveries: { kind: string; status: string; attempts: { error_class: string }[] }[] }>();
    expect(body.rules.map((r) => [r.id, r.states.map((s) => s.state)])).toEqual([[rule.id, ["ok"]]]);
    expect(body.deliveries).toHaveLength(6);
    expect(body.deliveries.every((d) => d.status === "failed" && d.attempts.length === 1 && d.attempts[0]!.error_class === "invalid_target")).toBe(true);
  });
});
