// The tool call bench:sdk makes: ~1 KB of arguments shaped like a real search call, validated by a
// Zod input schema, and a small JSON answer.
import type { z as Zod } from "zod";

export function argumentsFor(i: number) {
  return {
    query: `quarterly revenue by region and product line, call ${i}`,
    limit: 25,
    offset: i % 100,
    filters: { region: "EMEA", active: true, currency: "EUR", segment: ["enterprise", "mid-market", "smb"], since: "2026-01-01" },
    fields: ["id", "customer", "amount", "currency", "status", "created_at", "updated_at", "owner", "region", "product"],
    sort: [{ field: "amount", direction: "desc" }, { field: "created_at", direction: "asc" }],
    ids: Array.from({ length: 40 }, (_, k) => 100_000 + k * 7),
    note: "Customer asked for the breakdown before the board meeting; include refunds and credit notes as negatives, and split anything booked in the last week of the quarter into its own line so finance can reconcile it.",
    requested_by: { team: "finance-ops", channel: "#revenue-reporting" },
  };
}

export const ARGS_CHARS = JSON.stringify(argumentsFor(0)).length;

export const INPUT_SHAPE = (z: typeof Zod) => ({
  query: z.string(),
  limit: z.number(),
  offset: z.number(),
  filters: z.record(z.string(), z.unknown()),
  fields: z.array(z.string()),
  sort: z.array(z.object({ field: z.string(), direction: z.string() })),
  ids: z.array(z.number()),
  note: z.string(),
});

export const RESULT = { content: [{ type: "text" as const, text: '{"rows":[{"id":1,"amount":1200.5}],"total":1}' }] };
