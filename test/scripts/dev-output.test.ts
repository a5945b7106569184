// What `npm run dev` shows of wrangler's output (scripts/dev-output.mjs): the bindings table once
// however often wrangler reprints it, and a repeated error summed up once per interval.
import { describe, expect, it } from "vitest";
// @ts-expect-error -- a plain .mjs module of the scripts, without type declarations
import * as devOutput from "../../scripts/dev-output.mjs";

type Filter = { push(line: string, stream?: string): void; tick(): void; flush(): void };
const d = devOutput as {
  SHOWN_PER_INTERVAL: number;
  SUMMARY_INTERVAL_MS: number;
  createDevOutputFilter(o: { write: (line: string, stream: string) => void; now?: () => number }): Filter;
  errorKind(line: string): string;
};

const TABLE = [
  "Your Worker has access to the following bindings:",
  "Binding                                   Resource          Mode",
  "env.DB (mcpulse)                          D1 Database       local",
  "env.DB_2 (mcpulse-2)                      D1 Database       local",
  "",
];

function filter() {
  let clock = 0;
  const shown: { line: string; stream: string }[] = [];
  const f = d.createDevOutputFilter({ write: (line, stream) => shown.push({ line, stream }), now: () => clock });
  return {
    f,
    shown,
    lines: () => shown.map((s) => s.line),
    advance(ms: number) {
      clock += ms;
    },
  };
}

describe("npm run dev's output", () => {
  it("shows the bindings table once when wrangler prints it again on every reload (8 times on a busy machine)", () => {
    const t = filter();
    for (const line of ["⛅️ wrangler 4.156.2", ...TABLE, "⎔ Starting local server..."]) t.f.push(line);
    for (let i = 0; i < 7; i++) for (const line of ["⎔ Connection status updated", ...TABLE]) t.f.push(line);
    t.f.push("[wrangler:info] Ready on http://127.0.0.1:8787");
    t.f.flush();
    expect(t.lines().filter((l) => l.startsWith("Your Worker has access"))).toHaveLength(1);
    expect(t.lines().filter((l) => l.startsWith("env.DB "))).toHaveLength(1);
    expect(t.lines()).not.toContain("⎔ Connection status updated");
    expect(t.lines().at(-1)).toBe("[wrangler:info] Ready on http://127.0.0.1:8787");
  });

  it("shows a table that changed (a binding added while it runs)", () => {
    const t = filter();
    for (const line of TABLE) t.f.push(line);
    const changed = [...TABLE.slice(0, 4), "env.DB_3 (mcpulse-3)                      D1 Database       local", ""];
    for (const line of changed) t.f.push(line);
    t.f.flush();
    expect(t.lines().filter((l) => l.startsWith("Your Worker has access"))).toHaveLength(2);
    expect(t.lines()).toContain("env.DB_3 (mcpulse-3)                      D1 Database       local");
  });

  it("sums up a repeated error: the first few shown, the rest counted once per interval", () => {
    const t = filter();
    const error = (i: number) => `{"event":"ingest_queue_write_retry","project_id":"prj_${i}","attempt":${i % 3},"error":"D1_ERROR"}`;
    // 250 errors over 20 s: one every 80 ms.
    for (let i = 0; i < 250; i++) {
      t.f.push(error(i), "stderr");
      t.advance(80);
    }
    t.f.tick();
    const shown = t.lines();
    expect(shown.filter((l) => l.includes('"event":"ingest_queue_write_retry"'))).toHaveLength(d.SHOWN_PER_INTERVAL);
    expect(shown).toContain(`⋯ ingest_queue_write_retry: ${250 - d.SHOWN_PER_INTERVAL} more in the last 20 s`);
    expect(t.shown.find((s) => s.line.startsWith("⋯"))!.stream).toBe("stderr");
    expect(shown).toHaveLength(d.SHOWN_PER_INTERVAL + 1);
  });

  it("counts at the limit: exactly as many as are shown produce no summary; one more does", () => {
    for (const [n, summary] of [[d.SHOWN_PER_INTERVAL, false], [d.SHOWN_PER_INTERVAL + 1, true]] as const) {
      const t = filter();
      for (let i = 0; i < n; i++) t.f.push(`✘ [ERROR] D1_ERROR: database is locked (statement ${i})`, "stderr");
      t.f.flush();
      expect(t.lines().some((l) => l.startsWith("⋯"))).toBe(summary);
      expect(t.lines().filter((l) => l.startsWith("✘"))).toHaveLength(d.SHOWN_PER_INTERVAL);
    }
  });

  it("shows the error again in the next interval, and holds back a held line's indented continuation", () => {
    const t = filter();
    for (let i = 0; i < 5; i++) {
      t.f.push(`✘ [ERROR] D1_ERROR: database is locked (${i})`, "stderr");
      t.f.push("    at stack (worker.js:1:1)", "stderr");
    }
    t.advance(d.SUMMARY_INTERVAL_MS);
    t.f.push("✘ [ERROR] D1_ERROR: database is locked (5)", "stderr");
    t.f.flush();
    const lines = t.lines();
    expect(lines.filter((l) => l.startsWith("    at stack"))).toHaveLength(d.SHOWN_PER_INTERVAL);
    expect(lines).toContain("⋯ ✘ [ERROR] D1_ERROR: database is locked (#): 2 more in the last 20 s");
    expect(lines.at(-1)).toBe("✘ [ERROR] D1_ERROR: database is locked (5)");
  });

  it("sums up a local D1 outage as wrangler prints it: coloured ✘ lines each followed by blank lines, between request logs", () => {
    const t = filter();
    const red = (text: string) => `\x1b[31m✘ \x1b[41;31m[\x1b[41;97mERROR\x1b[41;31m]\x1b[0m \x1b[1m${text}\x1b[0m`;
    for (let i = 0; i < 200; i++) {
      t.f.push(red(`{"event":"ingest_write_retry","project_id":"prj_a","attempt":${(i % 3) + 1},"error":"Error","calls":1}`), "stderr");
      t.f.push("", "stderr");
      t.f.push("", "stderr");
      t.f.push(red("e = workerd/util/sqlite.c++:1827: failed: SQLite failed; dbErrorMessage(err, db) = database is locked: SQLITE_BUSY"), "stderr");
      t.f.push(`[wrangler:info] POST /v1/ingest 202 Accepted (${i}ms)`);
      t.advance(100);
    }
    t.f.flush();
    const lines = t.lines();
    expect(lines.filter((l) => l.includes("ingest_write_retry")).length).toBe(d.SHOWN_PER_INTERVAL + 1);
    expect(lines).toContain(`⋯ ingest_write_retry: ${200 - d.SHOWN_PER_INTERVAL} more in the last 20 s`);
    expect(lines.filter((l) => l.includes("SQLITE_BUSY")).length).toBe(d.SHOWN_PER_INTERVAL + 1);
    // No summary of blank lines, and no two blank lines in a row.
    expect(lines.some((l) => l.startsWith("⋯ :"))).toBe(false);
    expect(lines.some((l, i) => l === "" && lines[i + 1] === "")).toBe(false);
    expect(lines.filter((l) => l.includes("POST /v1/ingest 202"))).toHaveLength(200);
  });

  it("never holds back lines that are not errors (request logs, the rollup's reports)", () => {
    const t = filter();
    for (let i = 0; i < 100; i++) t.f.push(`[wrangler:info] POST /v1/ingest 202 Accepted (${i}ms)`);
    for (let i = 0; i < 10; i++) t.f.push(`{"event":"rollup","database":"DB","newCalls":${i}}`);
    t.f.flush();
    expect(t.lines()).toHaveLength(110);
  });

  it("counts as errors: stderr, wrangler's ✘, and the worker's failure events with or without an error field", () => {
    const t = filter();
    for (let i = 0; i < 5; i++) {
      t.f.push(`{"event":"ingest_dead_lettered","batch_id":"b${i}"}`);
      t.f.push(`▲ [WARNING] something ${i}`, "stderr");
    }
    t.f.flush();
    expect(t.lines().filter((l) => l.includes("ingest_dead_lettered"))).toHaveLength(d.SHOWN_PER_INTERVAL + 1);
    expect(t.lines()).toContain(`⋯ ingest_dead_lettered: ${5 - d.SHOWN_PER_INTERVAL} more in the last 0 s`);
    expect(t.lines().filter((l) => l.startsWith("▲"))).toHaveLength(d.SHOWN_PER_INTERVAL);
  });

  it("tells error kinds apart by the worker's event, else by the line without its numbers and values", () => {
    expect(d.errorKind('{"event":"budget_unavailable","error":"x"}')).toBe("budget_unavailable");
    expect(d.errorKind("✘ [ERROR] failed 12 of 30 for 'a' \"b7\"")).toBe(d.errorKind("✘ [ERROR] failed 3 of 30 for 'a' \"c9\""));
    expect(d.errorKind("✘ [ERROR] failed")).not.toBe(d.errorKind("✘ [ERROR] refused"));
  });
});
