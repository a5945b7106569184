// Test helpers for the alert routes and the cron: create destinations and rules through the real
// admin routes, run the 5-minute cron at a chosen time, read the outbox.
import { env } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import worker from "../../../src/worker/index.ts";
import { adminHeaders } from "../helpers/projects.ts";
/** Runs the 5-minute cron (one job per database: rollup, then the alert step) at `scheduledTime`. */
export { runCron } from "../helpers/cron.ts";

type Json = Record<string, unknown>;

export async function admin(method: string, path: string, body?: unknown): Promise<Response> {
  return exports.default.fetch(`http://worker/v1/admin/projects/${path}`, {
    method,
    headers: adminHeaders(),
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
  });
}

export async function createDestination(projectId: string, body: Json): Promise<{ id: string; secret?: string; url_hint: string }> {
  const res = await admin("POST", `${projectId}/alert-destinations`, body);
  if (res.status !== 201) throw new Error(`createDestination: HTTP ${res.status} ${await res.text()}`);
  return res.json();
}

export async function createRule(projectId: string, body: Json): Promise<{ id: string } & Json> {
  const res = await admin("POST", `${projectId}/alert-rules`, body);
  if (res.status !== 201) throw new Error(`createRule: HTTP ${res.status} ${await res.text()}`);
  return res.json();
}


export type OutboxRow = { notification_id: number; rule_id: string | null; kind: string; status: string; attempts: number; payload_json: string; destination_id: string };

export async function outboxOf(projectId: string): Promise<OutboxRow[]> {
  const { results } = await env.DB.prepare("SELECT * FROM alert_outbox WHERE project_id = ?1 ORDER BY notification_id").bind(projectId).all<OutboxRow>();
  return results;
}

export async function statesOf(projectId: string) {
  const { results } = await env.DB.prepare("SELECT * FROM alert_states WHERE project_id = ?1 ORDER BY rule_id, scope_key").bind(projectId).all<Json>();
  return results;
}
