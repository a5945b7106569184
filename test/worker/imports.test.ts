/// <reference types="vite/client" />
// The worker's import graph (docs/architecture.md): no cycles, type-only imports included, and every
// layer imports only the layers below it. Sources are read by Vite at transform time (?raw).
import { describe, expect, it } from "vitest";
import { findCycles } from "../helpers/import-cycles.ts";

const SOURCES = import.meta.glob("../../src/worker/**/*.{ts,tsx}", { query: "?raw", import: "default", eager: true }) as Record<string, string>;
const ROOT = "../../src/worker/";

/** Worker-relative path (`db/keys.ts`) → the worker-relative paths it imports. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const [file, source] of Object.entries(SOURCES)) {
    const from = file.slice(ROOT.length);
    const targets: string[] = [];
    for (const match of source.matchAll(/^\s*(?:import|export)\s(?:[^"';]*?\sfrom\s)?\s*["'](\.{1,2}\/[^"']+)["']/gm)) {
      const resolved = new URL(match[1] as string, `file:///src/worker/${from}`).pathname;
      if (resolved.startsWith("/src/worker/")) targets.push(resolved.slice("/src/worker/".length));
    }
    graph.set(from, [...new Set(targets)]);
  }
  return graph;
}


/** The layer of a worker file: its folder, or the file itself at the top. */
function layerOf(path: string): string {
  const slash = path.indexOf("/");
  return slash === -1 ? path : path.slice(0, slash + 1);
}

/** Leaves every layer may import: units, the retry rule, histogram buckets, text, the Env types, the wire contract. */
const LEAVES = ["time.ts", "retry-rule.ts", "histogram.ts", "text.ts", "env.ts", "errors.ts", "ip.ts"];
/** What each layer may import besides itself and LEAVES (src/shared is outside the worker and always allowed). */
const MAY_IMPORT: Record<string, string[]> = {
  "db/": [],
  // The Analytics Engine layout is named after the counter definition (one list of counters).
  // Explore past AE's 90 days answers from the read API's own sums of D1's day rows (analytics/explore.ts).
  "analytics/": ["metrics/counters.ts", "metrics/counter-sums.ts", "metrics/scope.ts"],
  "budget/": [],
  // OTLP's decoder (generated code) and its pure span → call map: the wire contract only.
  "otlp/": [],
  "throttle/": [],
  "health/": [],
  // A queue module: producer and consumer of one queue (STYLE.md), writing through db/; the rollup
  // queue's job is one database's rollup run and alert step (SPEC §7).
  "queues/": ["db/", "health/", "databases.ts", "rollup/", "alerts/", "moves/"],
  // A project's move between databases (SPEC §7): its steps write through db/, in the databases it resolves.
  "moves/": ["db/", "databases.ts", "auth.ts"],
  // The rollup writes the counters the one counter list names (metrics/counters.ts imports only leaves);
  // the hour-row fold keeps the hours schema regressions compare (metrics/schema-change.ts, leaves only).
  "rollup/": ["db/", "metrics/counters.ts", "metrics/schema-change.ts"],
  "metrics/": ["db/"],
  // The Explore page and the MCP explore tool ask Explore's one answering path (analytics/explore.ts), as GET /v1/explore does.
  "dashboard/": ["metrics/", "alerts/", "analytics/"],
  "mcp/": ["metrics/", "alerts/", "analytics/"],
  // Alerts evaluate with the read side's counter definitions (SPEC §5: the read API's figures).
  "alerts/": ["metrics/", "db/", "auth.ts"],
  // The ingest key is checked by its Durable Object (budget/), D1 only to refresh it.
  "auth.ts": ["db/", "budget/", "throttle/", "databases.ts"],
  // The list of databases and a project's database, resolved once per request or job (SPEC §7).
  "databases.ts": ["db/"],
  "routes/": ["metrics/", "dashboard/", "mcp/", "alerts/", "db/", "auth.ts", "analytics/", "budget/", "queues/", "health/", "throttle/", "databases.ts", "moves/", "oauth/", "otlp/"],
  // OAuth 2.1 for /mcp (SPEC §9): the library's configuration and a project's grants; leaves only.
  "oauth/": [],
  // The worker's fetch: the app, wrapped by the OAuth resource and authorization servers.
  "edge.ts": ["app.ts", "oauth/", "routes/", "alerts/"],
  "app.ts": ["routes/"],
  "index.ts": ["edge.ts", "app.ts", "rollup/", "alerts/", "budget/", "queues/", "health/", "throttle/"],
  "time.ts": [],
  "retry-rule.ts": [],
  "histogram.ts": [],
  "text.ts": [],
  "env.ts": ["budget/", "health/", "throttle/"],
  "errors.ts": [],
  "ip.ts": [],
};
/** The read side's routes and pages ask metrics/ and never run SQL of their own. */
const READ_ROUTES = ["routes/metrics.ts", "routes/dashboard.tsx", "routes/mcp.ts"];

describe("worker imports", () => {
  const graph = importGraph();

  it("sees the worker's files", () => {
    expect(graph.has("index.ts")).toBe(true);
    expect(graph.get("index.ts")).toContain("edge.ts");
    expect(graph.get("edge.ts")).toContain("app.ts");
    expect(graph.size).toBeGreaterThan(20);
  });

  it("has no import cycle", () => {
    expect(findCycles(graph)).toEqual([]);
  });

  it("finds a cycle when there is one (the check can fail)", () => {
    const cyclic = new Map([["app.ts", ["routes/a.ts"]], ["routes/a.ts", ["env.ts", "app.ts"]], ["env.ts", []]]);
    expect(findCycles(cyclic)).toEqual([["app.ts", "routes/a.ts", "app.ts"]]);
  });

  it("imports only downwards", () => {
    const wrong: string[] = [];
    for (const [from, targets] of graph) {
      const layer = layerOf(from);
      const allowed = MAY_IMPORT[layer];
      if (allowed === undefined) {
        wrong.push(`${from}: layer ${layer} has no rule in MAY_IMPORT`);
        continue;
      }
      for (const to of targets) {
        const target = layerOf(to);
        if (target === layer || LEAVES.includes(to) || allowed.includes(target) || allowed.includes(to)) continue;
        wrong.push(`${from} → ${to}`);
      }
      if (READ_ROUTES.includes(from) || layer === "dashboard/" || layer === "mcp/") {
        for (const to of targets) if (layerOf(to) === "db/") wrong.push(`${from} → ${to} (read side: ask metrics/)`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it("never imports the local engine or chdb: the embedded ClickHouse stays out of the worker bundle", () => {
    const wrong = Object.entries(SOURCES)
      .filter(([, source]) => /from\s+["'](?:chdb|[^"']*scripts\/)/.test(source) || /import\(\s*["'](?:chdb|[^"']*scripts\/)/.test(source))
      .map(([file]) => file);
    expect(wrong).toEqual([]);
  });
});
