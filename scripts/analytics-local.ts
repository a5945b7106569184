// The local stand-in for Workers Analytics Engine (SPEC §8 "Where it runs"): a real ClickHouse
// engine embedded in Node (chdb) holding one table shaped like an AE dataset — `timestamp`,
// `_sample_interval`, `index1`, blob1…blob20, double1…double20 — fed with the very data points
// the worker writes, and answering the very SQL explore-sql.ts builds. Node-side only: nothing in
// src/worker imports it (test/worker/imports.test.ts), so chdb never reaches the worker bundle.
//
// `npm run dev` (scripts/dev.mjs) starts it and tells the worker its URL (ANALYTICS_LOCAL_URL);
// the worker then posts each batch's points to POST /write from waitUntil, and Explore's local
// executor posts its SQL to POST /sql. Tests drive the class directly.
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Session } from "chdb";
import { CALLS_DATASET } from "../src/worker/analytics/calls-dataset.ts";

/** AE's dataset shape: 20 blobs and 20 doubles per point (Cloudflare's limits). */
export const AE_BLOBS = 20;
export const AE_DOUBLES = 20;

/** A data point as the worker writes it (AnalyticsEngineDataPoint, JSON-safe). */
export type LocalDataPoint = { indexes?: readonly unknown[]; blobs?: readonly unknown[]; doubles?: readonly number[] };

/** The engine's answer to a query: ClickHouse's (and AE's SQL API's) `FORMAT JSON` body. */
export type SqlAnswer = { meta: { name: string; type: string }[]; data: Record<string, unknown>[]; rows: number };

const blobColumns = Array.from({ length: AE_BLOBS }, (_, i) => `blob${i + 1}`);
const doubleColumns = Array.from({ length: AE_DOUBLES }, (_, i) => `double${i + 1}`);

/** The table, as AE presents a dataset to SQL. */
export function localTableSql(table: string): string {
  return [
    `CREATE TABLE IF NOT EXISTS ${table} (`,
    "  timestamp DateTime64(3, 'UTC'),",
    "  _sample_interval UInt32,",
    "  index1 String,",
    ...blobColumns.map((c) => `  ${c} String,`),
    ...doubleColumns.map((c, i) => `  ${c} Float64${i === AE_DOUBLES - 1 ? "" : ","}`),
    ") ENGINE = MergeTree ORDER BY (index1, timestamp)",
  ].join("\n");
}

export type WriteOptions = {
  /** AE's sampling weight for these points (1: every point kept). Tests set more to model sampling. */
  sampleInterval?: number;
  /** Receipt time, as AE stamps `timestamp`. */
  timestampMs?: number;
};

export class LocalAnalyticsEngine {
  readonly table: string;
  private readonly session: Session;

  /** `path`: a directory to keep the data in across runs; a temporary one without it. */
  constructor(path?: string, table: string = CALLS_DATASET.name) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(table)) throw new Error("bad table name");
    this.table = table;
    this.session = path === undefined ? new Session() : new Session(path);
    this.session.query(localTableSql(table));
  }

  /** Stores the points as AE would: each point one row, blobs and doubles by position. */
  async write(points: readonly LocalDataPoint[], options: WriteOptions = {}): Promise<number> {
    if (points.length === 0) return 0;
    const sampleInterval = options.sampleInterval ?? 1;
    if (!Number.isInteger(sampleInterval) || sampleInterval < 1) throw new Error("sample interval must be a whole number ≥ 1");
    const timestamp = new Date(options.timestampMs ?? Date.now()).toISOString().replace("T", " ").replace("Z", "");
    const lines = points.map((point) => {
      const row: Record<string, unknown> = { timestamp, _sample_interval: sampleInterval, index1: String(point.indexes?.[0] ?? "") };
      blobColumns.forEach((c, i) => (row[c] = String(point.blobs?.[i] ?? "")));
      doubleColumns.forEach((c, i) => {
        const value = Number(point.doubles?.[i] ?? 0);
        row[c] = Number.isFinite(value) ? value : 0;
      });
      return JSON.stringify(row);
    });
    // JSONEachRow: the engine parses the values; nothing here is ever spliced into SQL.
    await this.session.insert({ table: this.table, values: lines.join("\n"), format: "JSONEachRow" });
    return points.length;
  }

  /** Runs one SELECT (the builder's SQL, `FORMAT JSON` included) and returns its JSON answer. */
  async query(sql: string): Promise<SqlAnswer> {
    if (!/^\s*SELECT\b/i.test(sql)) throw new Error("only SELECT statements are answered");
    const result = await this.session.queryAsync(sql, { format: "JSON" });
    return result.json<SqlAnswer>();
  }

  /** Forgets every stored point (tests). */
  clear(): void {
    this.session.query(`TRUNCATE TABLE ${this.table}`);
  }

  close(): void {
    this.session.close();
  }
}

/** Bodies past this are refused: the worker posts at most 250 points per request. */
const MAX_BODY_BYTES = 4 * 1024 * 1024;

async function bodyOf(req: IncomingMessage): Promise<string | null> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of req) {
    total += (chunk as Buffer).length;
    if (total > MAX_BODY_BYTES) return null;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * The engine over HTTP on 127.0.0.1 (never another interface: it answers SQL): `POST /write`
 * `{"points": [...]}` stores points; `POST /sql` with the SQL as its body answers like AE's SQL API.
 */
export async function startLocalAnalyticsServer(engine: LocalAnalyticsEngine, port = 0): Promise<{ url: string; server: Server; close(): Promise<void> }> {
  const server = createServer(async (req, res) => {
    const reply = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    try {
      if (req.method !== "POST" || (req.url !== "/write" && req.url !== "/sql")) return reply(404, { error: "not found" });
      const body = await bodyOf(req);
      if (body === null) return reply(413, { error: "body too large" });
      if (req.url === "/write") {
        const parsed = JSON.parse(body) as { points?: unknown };
        if (!Array.isArray(parsed.points)) return reply(400, { error: "body must be {\"points\": [...]}" });
        return reply(200, { written: await engine.write(parsed.points as LocalDataPoint[]) });
      }
      return reply(200, await engine.query(body));
    } catch (error) {
      reply(400, { error: error instanceof Error ? error.message.slice(0, 500) : "query failed" });
    }
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  const address = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${address.port}`,
    server,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

type Running = { engine: LocalAnalyticsEngine; url: string; server: Server; close(): Promise<void> };
const SHARED = Symbol.for("mcpulse-edge.local-analytics");

/**
 * One engine and server per process (chdb opens one data directory per process): the test
 * configuration is evaluated once per test project, and each evaluation gets the same one.
 */
export function sharedLocalAnalytics(): Promise<Running> {
  const holder = globalThis as unknown as Record<symbol, Promise<Running> | undefined>;
  return (holder[SHARED] ??= (async () => {
    const engine = new LocalAnalyticsEngine();
    const running = await startLocalAnalyticsServer(engine);
    running.server.unref();
    return { engine, ...running };
  })());
}
