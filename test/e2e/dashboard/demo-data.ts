// A deterministic week of traffic for a fictional "orders" MCP server: the payloads its SDK would
// send (SPEC §1.2), built so every dashboard panel has something to show — a schema change with
// more bad arguments, slow and empty searches, large invoices, a dead tool, a policy-exempt tool,
// an unregistered tool, description churn and convergence, agreement checks and a silent field.
import { argsHash, descriptionHash, schemaHash } from "../../../src/shared/hash.ts";
import { descriptionNorm } from "../../../src/shared/description.ts";

type Payload = Record<string, unknown>;

/** A small seeded PRNG (mulberry32), so generated data is the same on every run. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type ToolSpec = {
  name: string;
  description: string;
  schema: Record<string, unknown>;
  weight: number;
  medianMs: number;
  /** Share of calls slower than 2 s (drawn from 2.2–6 s). */
  slow: number;
  badArgs: number;
  toolError: number;
  crashed: number;
  empty: number;
  responseChars: number;
  policy?: { requires_authorization: boolean; requires_verified_identity: boolean };
};

const TOOLS: ToolSpec[] = [
  { name: "search_orders", description: "Search orders by customer, date range or status.", schema: { type: "object", properties: { query: { type: "string" }, status: { type: "string" }, from: { type: "string" }, to: { type: "string" }, limit: { type: "integer" } } }, weight: 30, medianMs: 180, slow: 0.13, badArgs: 0.05, toolError: 0.01, crashed: 0.005, empty: 0.12, responseChars: 2400 },
  { name: "get_order", description: "Fetch one order by its id.", schema: { type: "object", properties: { order_id: { type: "string" } }, required: ["order_id"] }, weight: 22, medianMs: 45, slow: 0, badArgs: 0.02, toolError: 0.01, crashed: 0, empty: 0.01, responseChars: 1300 },
  { name: "get_customer", description: "Look up a customer by email or id.", schema: { type: "object", properties: { email: { type: "string" }, id: { type: "string" } } }, weight: 14, medianMs: 70, slow: 0, badArgs: 0.03, toolError: 0, crashed: 0, empty: 0.04, responseChars: 800 },
  { name: "lookup_customer", description: "Look up customer by id or email.", schema: { type: "object", properties: { id: { type: "string" }, email: { type: "string" } } }, weight: 2, medianMs: 90, slow: 0, badArgs: 0.05, toolError: 0, crashed: 0, empty: 0.05, responseChars: 800 },
  { name: "list_invoices", description: "List the invoices of a customer, newest first.", schema: { type: "object", properties: { customer_id: { type: "string" }, page: { type: "integer" } }, required: ["customer_id"] }, weight: 10, medianMs: 320, slow: 0.02, badArgs: 0.02, toolError: 0.01, crashed: 0, empty: 0.02, responseChars: 14_500 },
  { name: "refund_order", description: "Refund an order fully or partially.", schema: { type: "object", properties: { order_id: { type: "string" }, amount_cents: { type: "integer" }, reason: { type: "string", enum: ["damaged", "late", "other"] } }, required: ["order_id", "reason"] }, weight: 8, medianMs: 540, slow: 0.03, badArgs: 0.34, toolError: 0.04, crashed: 0.01, empty: 0, responseChars: 260 },
  { name: "update_address", description: "Change the shipping address of an open order.", schema: { type: "object", properties: { order_id: { type: "string" }, address: { type: "object" } }, required: ["order_id", "address"] }, weight: 5, medianMs: 210, slow: 0, badArgs: 0.06, toolError: 0.09, crashed: 0, empty: 0, responseChars: 180 },
  { name: "export_report", description: "Export a CSV report of orders for accounting.", schema: { type: "object", properties: { month: { type: "string", pattern: "^\\d{4}-\\d{2}$" }, columns: { type: "array", items: { type: "string", enum: ["id", "customer", "total", "tax", "currency", "status", "created_at", "shipped_at"] } }, format: { type: "string", enum: ["csv", "xlsx"] }, include_refunds: { type: "boolean" }, timezone: { type: "string" } }, required: ["month"], additionalProperties: false, description: "Monthly accounting export; heavy, rarely needed, only for finance staff with the right role. Produces a file link valid for 24 hours." }, weight: 0, medianMs: 0, slow: 0, badArgs: 0, toolError: 0, crashed: 0, empty: 0, responseChars: 0 },
  { name: "admin_purge_customer", description: "Erase a customer's personal data (GDPR).", schema: { type: "object", properties: { customer_id: { type: "string" } }, required: ["customer_id"] }, weight: 0, medianMs: 0, slow: 0, badArgs: 0, toolError: 0, crashed: 0, empty: 0, responseChars: 0, policy: { requires_authorization: true, requires_verified_identity: true } },
];

/** Called by old clients, but no longer in the server's tool list. */
const UNREGISTERED = { name: "legacy_order_lookup", weight: 1 };
const CLIENTS: [string, number][] = [["claude-desktop", 0.5], ["cursor", 0.3], ["vscode-copilot", 0.2]];
/** search_orders' schema gained a required field in the middle of the week (more bad arguments). */
const SEARCH_SCHEMA_V2 = { ...TOOLS[0]!.schema, required: ["query", "from"] };
const GET_ORDER_DESCRIPTION_V2 = "Get a single order by id, with its line items and shipping status.";

function pick<T>(rand: () => number, items: [T, number][]): T {
  const total = items.reduce((n, [, w]) => n + w, 0);
  let r = rand() * total;
  for (const [item, w] of items) {
    r -= w;
    if (r <= 0) return item;
  }
  return items[items.length - 1]![0];
}

function logNormalMs(rand: () => number, median: number): number {
  const z = Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
  return Math.max(1, Math.round(median * Math.exp(0.55 * z)));
}

export type DemoWorkload = { payloads: Payload[]; calls: number; startups: number; agreements: number; sessions: number };

/**
 * About 70 sessions and 600 calls, all inside the dashboard's default range at `nowMs` (the last 7
 * UTC days, today included), whatever the hour: from a minute after the range's first midnight.
 */
export function demoWorkload(nowMs: number, seed = 7): DemoWorkload {
  const rand = mulberry32(seed);
  const payloads: Payload[] = [];
  const weekStart = Math.floor(nowMs / 86_400_000) * 86_400_000 - 6 * 86_400_000 + 60_000;
  const changeAt = nowMs - 3 * 86_400_000;
  const sessionCount = 72;
  let calls = 0;
  let startups = 0;
  let agreements = 0;
  const starts = Array.from({ length: sessionCount }, () => weekStart + rand() * (nowMs - weekStart - 20 * 60_000)).sort((a, b) => a - b);
  for (const [i, start] of starts.entries()) {
    const sessionId = `s_${(0x100000000000 + i * 7919).toString(16).slice(-12)}`;
    const client = pick(rand, CLIENTS);
    const afterChange = start >= changeAt;
    payloads.push({
      v: 1, type: "startup", session_id: sessionId, client_name: client, sdk: "mcpulse-ts/0.1.0", mcp_sdk_version: "1.32.0",
      transport: "stdio", protocol_version: "2025-06-18",
      agree_declared: [
        { field: "order_total", tools: ["get_order", "list_invoices"] },
        { field: "customer_email", tools: ["get_customer", "lookup_customer"] },
      ],
      tools: TOOLS.map((t) => {
        const schema = t.name === "search_orders" && afterChange ? SEARCH_SCHEMA_V2 : t.schema;
        const description = t.name === "get_order" && start >= nowMs - 4 * 86_400_000 ? GET_ORDER_DESCRIPTION_V2 : t.description;
        const entry = { name: t.name, description, inputSchema: schema };
        return {
          name: t.name, schema_bytes: JSON.stringify(entry).length, schema_hash: schemaHash(schema),
          description_hash: descriptionHash(description), description_norm: descriptionNorm(description), policy: t.policy ?? null,
        };
      }),
    });
    startups++;
    let t = start;
    const n = 3 + Math.floor(rand() * 10);
    let sawOrderTotal = false;
    for (let k = 0; k < n; k++) {
      const name = pick(rand, [...TOOLS.filter((x) => x.weight > 0).map((x) => [x.name, x.weight] as [string, number]), [UNREGISTERED.name, UNREGISTERED.weight]]);
      const spec = TOOLS.find((x) => x.name === name) ?? { ...TOOLS[1]!, name };
      const badArgs = name === "search_orders" && afterChange ? 0.24 : spec.badArgs;
      const r = rand();
      const outcome = r < badArgs ? "bad_args" : r < badArgs + spec.toolError ? "tool_error" : r < badArgs + spec.toolError + spec.crashed ? "crashed" : "ok";
      const slow = rand() < spec.slow;
      const duration = outcome === "bad_args" ? 1 + Math.floor(rand() * 4) : slow ? 2200 + Math.floor(rand() * 3800) : logNormalMs(rand, spec.medianMs);
      const empty = outcome === "ok" && rand() < spec.empty;
      const response = outcome === "ok" ? (empty ? 2 : Math.round(spec.responseChars * (0.6 + rand() * 0.8))) : outcome === "bad_args" ? 0 : 120;
      payloads.push({
        v: 1, type: "call", session_id: sessionId, client_name: client, tool_name: name, started_at: new Date(t).toISOString(),
        duration_ms: duration, outcome, response_bytes: response, is_empty: empty, args_hash: argsHash({ tool: name, k, i }),
      });
      calls++;
      if (name === "get_order" || name === "list_invoices") sawOrderTotal = true;
      t += duration + (outcome === "bad_args" && rand() < 0.7 ? 800 + rand() * 6000 : 4000 + rand() * 40_000);
    }
    if (sawOrderTotal && rand() < 0.8) {
      payloads.push({
        v: 1, type: "agreement", session_id: sessionId, field: "order_total", tool_a: "get_order", tool_b: "list_invoices",
        agreed: rand() > 0.12, checked_at: new Date(Math.min(t, nowMs - 60_000)).toISOString(), window_ms: 300_000,
      });
      agreements++;
    }
  }
  return { payloads, calls, startups, agreements, sessions: sessionCount };
}
