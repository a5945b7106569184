// The tool calls bench:sdk makes: arguments of about 100 B, 1 KB and 10 KB shaped like a real
// search call, validated by a Zod input schema, and a small JSON answer.
import type { z as Zod } from "zod";

export const ARG_SIZES = ["100 B", "1 KB", "10 KB"] as const;
export type ArgSize = (typeof ARG_SIZES)[number];

function smallArguments(i: number) {
  return { query: `quarterly revenue EMEA, call ${i}`, limit: 25, offset: i % 100, fields: ["id", "amount", "status"] };
}

function kilobyteArguments(i: number) {
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

/** The 1 KB call with the conversation's earlier turns attached: about 10 KB in all. */
function tenKilobyteArguments(i: number) {
  return {
    ...kilobyteArguments(i),
    history: Array.from({ length: 49 }, (_, k) => ({
      turn: k,
      role: k % 2 === 0 ? "user" : "assistant",
      text: `Turn ${k} of call ${i}: which regions grew faster than plan last quarter, and which products carried them there?`,
      tags: ["revenue", "quarterly", k % 3 === 0 ? "emea" : "apac"],
    })),
  };
}

export function argumentsFor(size: ArgSize, i: number): Record<string, unknown> {
  if (size === "100 B") return smallArguments(i);
  if (size === "1 KB") return kilobyteArguments(i);
  return tenKilobyteArguments(i);
}

/** Characters of the JSON of a size's arguments (what the client sends). */
export const argsChars = (size: ArgSize) => JSON.stringify(argumentsFor(size, 0)).length;

/** One schema for all three: what a size does not send is optional. */
export const INPUT_SHAPE = (z: typeof Zod) => ({
  query: z.string(),
  limit: z.number(),
  offset: z.number(),
  fields: z.array(z.string()),
  filters: z.record(z.string(), z.unknown()).optional(),
  sort: z.array(z.object({ field: z.string(), direction: z.string() })).optional(),
  ids: z.array(z.number()).optional(),
  note: z.string().optional(),
  history: z.array(z.object({ turn: z.number(), role: z.string(), text: z.string(), tags: z.array(z.string()) })).optional(),
});

export const RESULT = { content: [{ type: "text" as const, text: '{"rows":[{"id":1,"amount":1200.5}],"total":1}' }] };
