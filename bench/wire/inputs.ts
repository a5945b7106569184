// Deterministic inputs for bench/wire.ts: argument objects of about 80 B, 1 KB and 64 KB, and a
// 500-call ingest envelope as the SDK sends it.

/** SPEC §1.3's "realistic call" (82 bytes of canonical JSON). */
export const smallArguments = {
  query: "quarterly revenue",
  limit: 25,
  filters: { region: "EMEA", active: true },
};

/** About 1 KB (1,047 bytes canonical): free text, nested filters, ids, line items with prices; keys unsorted. */
export const oneKilobyteArguments = {
  query: "Open invoices for ACME GmbH in Zürich, overdue more than 30 days, excluding disputed ones",
  limit: 50,
  cursor: "eyJvZmZzZXQiOjEwMCwic29ydCI6ImR1ZV9kYXRlIn0",
  include_archived: false,
  filters: {
    status: ["open", "overdue"],
    currency: "EUR",
    amount: { min: 100, max: 250_000.5 },
    due_date: { from: "2026-01-01", to: "2026-11-29" },
    tags: ["priority", "q4", "enterprise"],
  },
  customer_ids: [10_234, 10_235, 10_240, 11_002, 11_789, 12_001, 12_450, 13_000],
  line_items: Array.from({ length: 6 }, (_, i) => ({
    sku: `SKU-${1000 + i}`,
    quantity: i + 1,
    unit_price: 19.99 + i,
    description: `Widget model ${i} — blue`,
  })),
  sort: { field: "due_date", direction: "asc" },
};

/** About 64 KB: a batch-style argument with 273 records of mixed types, nesting and non-ASCII text. */
export const sixtyFourKilobyteArguments = {
  operation: "bulk_upsert",
  dry_run: true,
  records: Array.from({ length: 273 }, (_, i) => ({
    id: `rec_${i.toString(36).padStart(6, "0")}`,
    title: `Record ${i}: ${"naïve café résumé ".slice(0, 6 + (i % 12))}`,
    score: (i * 7.3) % 100,
    active: i % 3 !== 0,
    owner: { name: `user${i % 17}`, email: `user${i % 17}@example.com`, roles: ["reader", i % 5 === 0 ? "admin" : "writer"] },
    tags: [`t${i % 7}`, `g${i % 11}`],
    meta: i % 4 === 0 ? null : { created: "2026-11-01T10:00:00Z", revision: i },
  })),
};

/** A `{"batch": [...]}` body of `count` call payloads, with Go-style nanosecond timestamps on some. */
export function callEnvelope(count: number, nowMs: number): string {
  const batch = Array.from({ length: count }, (_, i) => {
    const started = new Date(nowMs - 60_000 - i * 1000).toISOString();
    return {
      v: 1,
      type: "call",
      session_id: "s_0123456789ab",
      client_name: i % 2 === 0 ? "claude-desktop" : "cursor",
      tool_name: `search_orders_${i % 25}`,
      started_at: i % 3 === 0 ? started.replace("Z", "123456Z") : started,
      duration_ms: (i * 37) % 5000,
      outcome: i % 10 === 0 ? "tool_error" : "ok",
      response_bytes: 1000 + i,
      is_empty: i % 7 === 0 && i % 10 !== 0,
      args_hash: "9c1b4e2f0a11",
    };
  });
  return JSON.stringify({ batch });
}
