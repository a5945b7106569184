// The widest data the wire allows (SPEC §1.2), for the dashboard's layout checks: tool names of 200
// code points (ASCII, CJK, emoji, a right-to-left name with a bidi override), client names of 128,
// a long project name, and thousands of tools — the pages must stay as wide as the screen.
import { argsHash, descriptionHash, schemaHash } from "../../../src/shared/hash.ts";
import { descriptionNorm } from "../../../src/shared/description.ts";
import { MAX_CLIENT_NAME_CHARS, MAX_TOOL_NAME_CHARS } from "../../../src/shared/limits.ts";
import { storedPayloadRows } from "../helpers/stored-rows.ts";

type Payload = Record<string, unknown>;

/** `seed` repeated and cut to exactly `points` code points. */
export function ofLength(seed: string, points: number): string {
  const chars = [...seed];
  return Array.from({ length: points }, (_, i) => chars[i % chars.length]).join("");
}

/** The longest names: every one exactly at its cap. */
export const LONG_TOOLS = [
  ofLength("get_customer_subscription_billing_history_for_account_v2_", MAX_TOOL_NAME_CHARS),
  ofLength("检索客户订阅账单历史记录", MAX_TOOL_NAME_CHARS),
  ofLength("🧾📦🚚", MAX_TOOL_NAME_CHARS),
  ofLength("حساب_العميل_\u202Eoverride_", MAX_TOOL_NAME_CHARS),
];
export const LONG_CLIENTS = [
  ofLength("enterprise-assistant-desktop-build-2026.11.30-", MAX_CLIENT_NAME_CHARS),
  ofLength("クライアント", MAX_CLIENT_NAME_CHARS),
];
export const LONG_PROJECT_NAME = ofLength("Customer billing and subscriptions MCP server (production, eu-west) ", 120);
/** How many tools the project has in all (the tools table pages them; the page must stay bounded). */
export const MANY_TOOLS = 2_000;

/**
 * Calls to the long-named tools from the long-named clients (a few failing, some empty, latencies from
 * under 1 ms to seconds), a startup registering the long-named tools, and one call to each of
 * MANY_TOOLS tools. All inside the last day before `nowMs`.
 */
export function longNamesWorkload(nowMs: number): Payload[] {
  const payloads: Payload[] = [];
  const start = nowMs - 6 * 3_600_000;
  const schema = { type: "object", properties: { id: { type: "string" } } };
  for (const [i, client] of LONG_CLIENTS.entries()) {
    payloads.push({
      v: 1, type: "startup", session_id: `s_long${i}`, client_name: client, transport: "stdio",
      tools: LONG_TOOLS.map((name) => ({
        name, schema_bytes: 300, schema_hash: schemaHash(schema),
        description_hash: descriptionHash(`Fetch ${name}`), description_norm: descriptionNorm(`Fetch ${name}`),
      })),
    });
  }
  let k = 0;
  for (const [t, tool] of LONG_TOOLS.entries()) {
    for (const [c, client] of LONG_CLIENTS.entries()) {
      for (let n = 0; n < 30; n++) {
        const outcome = n % 7 === 0 ? "bad_args" : n % 11 === 0 ? "crashed" : "ok";
        payloads.push({
          v: 1, type: "call", session_id: `s_long${c}_${n % 5}`, client_name: client, tool_name: tool,
          started_at: new Date(start + (k++) * 47_000).toISOString(),
          duration_ms: t === 0 ? 0 : [0, 3, 40, 700, 2400][n % 5], outcome, response_bytes: 400,
          is_empty: outcome === "ok" && n % 9 === 0, args_hash: argsHash({ t, c, n }),
        });
      }
    }
  }
  for (let i = 0; i < MANY_TOOLS - LONG_TOOLS.length; i++) {
    payloads.push({
      v: 1, type: "call", session_id: `s_many${i % 50}`, client_name: LONG_CLIENTS[i % 2], tool_name: `${ofLength("bulk_tool_", 180)}_${String(i).padStart(5, "0")}`,
      started_at: new Date(start + 30 * 60_000 + i * 1000).toISOString(), duration_ms: 12, outcome: "ok", response_bytes: 80,
      is_empty: false, args_hash: argsHash({ i }),
    });
  }
  return payloads;
}

/** Sends `payloads` through the real ingest, waits until every row has landed, and runs the rollup. */
export async function ingestAndRollup(
  worker: { url: string; db: D1Database; runRollup(): Promise<void> },
  project: { project_id: string; ingest_key: string },
  payloads: Payload[],
): Promise<void> {
  for (let i = 0; i < payloads.length; i += 400) {
    const res = await fetch(`${worker.url}/v1/ingest`, {
      method: "POST",
      headers: { authorization: `Bearer ${project.ingest_key}`, "content-type": "application/json" },
      body: JSON.stringify({ batch: payloads.slice(i, i + 400) }),
    });
    if (res.status !== 202) throw new Error(`ingest: HTTP ${res.status}`);
  }
  const deadline = Date.now() + 30_000;
  while ((await storedPayloadRows(worker.db, project.project_id)) < payloads.length) {
    if (Date.now() > deadline) throw new Error("ingest: rows did not land");
    await new Promise((r) => setTimeout(r, 100));
  }
  await worker.runRollup();
}
