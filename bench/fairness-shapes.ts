// The noisy projects of bench:fairness: one generator of raw-call workloads (call_batches rows as
// ingest stores them), each shape a few numbers — sessions, calls, hours, tools and the length of
// their names, distinct argument hashes, calls per request, durations — seeded by SQL over `i`.
import { durationBucket } from "../src/worker/histogram.ts";

const DAY = 86_400_000;
const HOUR = 3_600_000;

export interface NoisyShape {
  name: string;
  /** What the shape stresses, for the report. */
  about: string;
  calls: number;
  sessions: number;
  /** The calls spread evenly over this many hours before the seed time. */
  hours: number;
  tools: number;
  /** Length of each tool name (SPEC §1.2 caps tool_name at 200 characters). */
  toolNameChars: number;
  /** Distinct args_hash values. */
  argsHashes: number;
  /** Calls per request (one session's consecutive calls; SPEC §1.2 allows 1,000). */
  requestCalls: number;
  /** Durations taken in turn by the calls. */
  durationsMs: readonly number[];
}

export const FAIRNESS_SHAPES: readonly NoisyShape[] = [
  {
    name: "day-long calls, 2 sessions", about: "the shape the bounds were first tuned on", calls: 200_000, sessions: 2, hours: 48, tools: 6,
    toolNameChars: 6, argsHashes: 5, requestCalls: 500, durationsMs: [DAY, 250, DAY, 1_200],
  },
  {
    name: "long names, many args, 1,000-call requests", about: "200-character tool names, ~4,000 argument hashes, every other call a day long",
    calls: 200_000, sessions: 2, hours: 40, tools: 5, toolNameChars: 200, argsHashes: 4_000, requestCalls: 1_000, durationsMs: [DAY, 250, DAY, 0],
  },
  {
    name: "many sessions, 1-call requests", about: "2,000 sessions, one call per request", calls: 40_000, sessions: 2_000, hours: 24, tools: 8,
    toolNameChars: 12, argsHashes: 50, requestCalls: 1, durationsMs: [40, 0, 1_200, 30_000],
  },
  {
    name: "many distinct args, many tools", about: "every call its own argument hash, 150 tools, day-long calls", calls: 100_000, sessions: 4, hours: 40,
    tools: 150, toolNameChars: 64, argsHashes: 100_000, requestCalls: 200, durationsMs: [DAY, 0, 5_400_000, 250],
  },
];

/**
 * The INSERT seeding calls ?1..?2 of `shape` for project ?4, the calls ending at ?3 (ms): call i is
 * of session i % sessions, started evenly over the shape's hours, in requests of `requestCalls`
 * consecutive calls of one session, the sessions' requests interleaved in time order.
 */
export function shapeSeedSql(shape: NoisyShape): string {
  const d = shape.durationsMs;
  const pad = Math.max(0, shape.toolNameChars - 8);
  const spacing = (shape.hours * HOUR) / shape.calls;
  return `WITH RECURSIVE n(i) AS (SELECT CAST(?1 AS INTEGER) UNION ALL SELECT i + 1 FROM n WHERE i < ?2)
INSERT INTO call_batches (project_id, received_at_ms, call_count, calls_json)
SELECT ?4, MAX(received_at_ms), COUNT(*), json_group_array(json(call)) FROM (
  SELECT i, i % ${shape.sessions} AS s, (i / ${shape.sessions}) / ${shape.requestCalls} AS request,
    json_array('s_noisy_' || (i % ${shape.sessions}), 'claude-ai',
      substr('tool_' || ((i * 7919) % 97 % ${shape.tools}) || '_' || '${"x".repeat(pad)}', 1, ${shape.toolNameChars}),
      CAST(?3 - ${shape.hours * HOUR} + i * ${spacing} AS INTEGER),
      CASE i % ${d.length} ${d.map((x, k) => `WHEN ${k} THEN ${x}`).join(" ")} END,
      CASE i % 20 WHEN 0 THEN 'tool_error' ELSE 'ok' END, (i * 101) % 5000, 0, printf('%012x', (i * 31) % ${shape.argsHashes}),
      CASE i % ${d.length} ${d.map((x, k) => `WHEN ${k} THEN ${durationBucket(x)}`).join(" ")} END) AS call,
    ?3 + i AS received_at_ms
  FROM n ORDER BY i)
GROUP BY s, request ORDER BY MIN(i)`;
}

/** Seeds the shape's calls into project `project`, the last call starting just before `endMs`. */
export async function seedShape(db: D1Database, shape: NoisyShape, project: string, endMs: number): Promise<void> {
  // Whole requests per statement: a range boundary inside a request would split it in two rows.
  const step = shape.sessions * shape.requestCalls * Math.max(1, Math.floor(50_000 / (shape.sessions * shape.requestCalls)));
  const sql = shapeSeedSql(shape);
  for (let lo = 0; lo < shape.calls; lo += step) {
    await db.prepare(sql).bind(lo, Math.min(shape.calls, lo + step) - 1, endMs, project).run();
  }
}
