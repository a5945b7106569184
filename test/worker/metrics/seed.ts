// Seeds the rollup tables directly (what the cron would write), so read tests can state exactly
// which sums they expect. Hour rows are also added into the day rows, as the rollup keeps them.
import { env } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { durationBucket, type DurationHistogram } from "../../../src/worker/histogram.ts";
import { COUNTER_NAMES, type Counters } from "../../../src/worker/metrics/counters.ts";

export const DAY = 86_400_000;
export const HOUR = 3_600_000;

export function dayMs(date: string): number {
  return Date.parse(`${date}T00:00:00Z`);
}

/** A histogram of the given durations (ms), as ingest buckets them. */
export function histogramOf(durations: number[]): DurationHistogram {
  const h: DurationHistogram = {};
  for (const d of durations) {
    const b = String(durationBucket(d));
    h[b] = (h[b] ?? 0) + 1;
  }
  return h;
}

export type HourRow = {
  projectId: string;
  hourMs: number;
  tool: string;
  client: string;
  counters: Partial<Counters>;
  /** Defaults to `calls` calls of 10 ms. */
  histogram?: DurationHistogram;
};

/** Every counter column, from the one counter list (read when a row is seeded). */
const columns = () => COUNTER_NAMES;

/** Inserts one hour row; the day row adds it by trigger (counters and histogram, migration 0013). */
export async function seedHour(row: HourRow): Promise<void> {
  const names = columns();
  const values = names.map((c) => row.counters[c] ?? 0);
  const calls = row.counters.calls ?? 0;
  const histogram = row.histogram ?? (calls > 0 ? { "10": calls } : {});
  const placeholders = names.map((_, i) => `?${i + 5}`).join(", ");
  await env.DB.prepare(
    `INSERT INTO tool_hour_metrics (project_id, hour_start_ms, tool_name, client_name, ${names.join(", ")}, duration_histogram_json) ` +
      `VALUES (?1, ?2, ?3, ?4, ${placeholders}, ?${names.length + 5})`,
  )
    .bind(row.projectId, row.hourMs, row.tool, row.client, ...values, JSON.stringify(histogram))
    .run();
  // Its day row follows by trigger (migration 0013).
}

export async function seedRegistered(
  projectId: string,
  tool: string,
  opts: {
    schemaBytes?: number;
    schemaHash?: string | null;
    descriptionHash?: string | null;
    descriptionNorm?: string | null;
    requiresAuthorization?: boolean;
    requiresVerifiedIdentity?: boolean;
  } = {},
): Promise<void> {
  await env.DB.prepare(
    "INSERT OR REPLACE INTO registered_tools (project_id, tool_name, schema_bytes, schema_hash, description_hash, " +
      "description_norm, requires_authorization, requires_verified_identity, startup_seq) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 1)",
  )
    .bind(
      projectId,
      tool,
      opts.schemaBytes ?? 400,
      opts.schemaHash === undefined ? "aaaaaaaaaaaa" : opts.schemaHash,
      opts.descriptionHash === undefined ? "dddddddddddd" : opts.descriptionHash,
      opts.descriptionNorm === undefined ? null : opts.descriptionNorm,
      opts.requiresAuthorization ? 1 : 0,
      opts.requiresVerifiedIdentity ? 1 : 0,
    )
    .run();
}

export async function seedVersion(
  projectId: string,
  tool: string,
  v: { schemaHash: string; descriptionHash: string; firstSeenMs: number; lastSeenMs: number; startups?: number; norm?: string },
): Promise<void> {
  await env.DB.prepare(
    "INSERT INTO tool_versions (project_id, tool_name, schema_hash, description_hash, description_norm, first_seen_ms, " +
      "last_seen_ms, startups) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
  )
    .bind(projectId, tool, v.schemaHash, v.descriptionHash, v.norm ?? null, v.firstSeenMs, v.lastSeenMs, v.startups ?? 1)
    .run();
}

export async function seedPair(
  projectId: string,
  date: string,
  client: string,
  from: string,
  to: string,
  count: number,
): Promise<void> {
  // One row per (day, client), the pair added to its JSON object (migration 0019).
  await env.DB.prepare(
    `INSERT INTO pair_days (project_id, day_start_ms, client_name, pairs_json) VALUES (?1, ?2, ?3, json_object(json_array(?4, ?5), ?6))
     ON CONFLICT (project_id, day_start_ms, client_name) DO UPDATE SET pairs_json = json_patch(pairs_json, excluded.pairs_json)`,
  )
    .bind(projectId, dayMs(date), client, from, to, count)
    .run();
}

export async function seedSession(
  projectId: string,
  sessionId: string,
  s: { firstSeenMs: number; client: string; calls: number; responseBytes: number; schemaBytes: number },
): Promise<void> {
  await env.DB.prepare(
    "INSERT INTO sessions (project_id, session_id, first_seen_ms, last_seen_ms, client_name, calls, response_bytes_sum, schema_bytes_sum) " +
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
  )
    .bind(projectId, sessionId, s.firstSeenMs, s.firstSeenMs + 1000, s.client, s.calls, s.responseBytes, s.schemaBytes)
    .run();
}

export async function seedAgreement(
  projectId: string,
  date: string,
  field: string,
  toolA: string,
  toolB: string,
  checks: number,
  disagreements: number,
): Promise<void> {
  await env.DB.prepare(
    "INSERT INTO agreement_days (project_id, day_start_ms, field, tool_a, tool_b, checks, disagreements) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
  )
    .bind(projectId, dayMs(date), field, toolA, toolB, checks, disagreements)
    .run();
}

export async function seedDeclaration(projectId: string, field: string, tool: string): Promise<void> {
  await env.DB.prepare(
    "INSERT INTO agreement_declarations (project_id, field, tool_name, last_declared_ms) VALUES (?1, ?2, ?3, ?4)",
  )
    .bind(projectId, field, tool, Date.now())
    .run();
}

export async function setAsOf(ms: number | null): Promise<void> {
  if (ms === null) await env.DB.prepare("DELETE FROM rollup_state WHERE name = 'as_of_ms'").run();
  else
    await env.DB.prepare("INSERT OR REPLACE INTO rollup_state (name, value) VALUES ('as_of_ms', ?1)").bind(ms).run();
}

/** GET a metrics path with a read key; returns status and parsed JSON. */
export async function getJson<T = Record<string, unknown>>(
  path: string,
  key: string | null,
): Promise<{ status: number; body: T; headers: Headers }> {
  const headers: Record<string, string> = key === null ? {} : { authorization: `Bearer ${key}` };
  const res = await exports.default.fetch(`http://worker${path}`, { headers });
  return { status: res.status, body: (await res.json()) as T, headers: res.headers };
}
