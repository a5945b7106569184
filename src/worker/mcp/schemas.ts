// The explore tool's arguments (SPEC §6), the one schema the MCP tools have of their own; outputs are
// the read API's answer schemas, which the MCP SDK checks every structuredContent against.
import { z } from "zod";
import { DIMENSION_NAMES, EXPLORE_MAX_BY, EXPLORE_MAX_FILTER_VALUES, EXPLORE_MAX_LIMIT, GRAINS, MEASURES } from "../analytics/explore-query.ts";

/**
 * The `explore` tool's arguments: GET /v1/explore's parameters as one JSON object, from the same
 * lists (MEASURES, DIMENSION_NAMES, GRAINS). The tool hands them to the route's own schema
 * (exploreQuerySchema) as if from a URL, which checks the values and the range (SPEC §8).
 */
export const ExploreArguments = z.strictObject({
  measures: z.array(z.enum(MEASURES)).min(1).optional().describe(`what to compute per group (default ["calls"]); among: ${MEASURES.join(", ")}`),
  by: z.array(z.enum(DIMENSION_NAMES)).max(EXPLORE_MAX_BY).optional().describe(`up to ${EXPLORE_MAX_BY} dimensions to break down by (default none); among: ${DIMENSION_NAMES.join(", ")}`),
  filters: z
    .strictObject(Object.fromEntries(DIMENSION_NAMES.map((d) => [d, z.array(z.string()).min(1).max(EXPLORE_MAX_FILTER_VALUES).optional()])) as Record<(typeof DIMENSION_NAMES)[number], z.ZodOptional<z.ZodArray<z.ZodString>>>)
    .optional()
    .describe('per dimension, the values any of which matches; dimensions are ANDed, e.g. {"tool": ["search_orders"], "outcome": ["bad_args", "crashed"]}'),
  from: z.string().optional().describe("start: a UTC date YYYY-MM-DD (inclusive) or an ISO 8601 instant; default 7 days before `to`; before the last 90 days only D1's day rows answer"),
  to: z.string().optional().describe("end: a UTC date YYYY-MM-DD (inclusive) or an ISO 8601 instant (exclusive); default now"),
  grain: z.enum(GRAINS).optional().describe("none (default), hour (at most 31 days) or day: a row per time bucket too"),
  limit: z.number().int().min(1).max(EXPLORE_MAX_LIMIT).optional().describe(`groups kept, largest first (default 50, at most ${EXPLORE_MAX_LIMIT}); the rest summed as (other)`),
});
