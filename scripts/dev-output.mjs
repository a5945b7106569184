// What `npm run dev` shows of wrangler's output: everything, except that
// - the bindings table is shown once: wrangler prints it again on every reload, and it reloads each
//   time the machine's registry of local workers changes (any `wrangler dev` or test worker starting
//   or stopping: 8 tables before the first request on a busy machine); a table that changed is shown;
// - an error line that repeats (a local D1 outage writes one per failed statement: ~250 in 20 s) is
//   shown the first few times, then summed up once per interval: "⋯ d1_unavailable: 247 more in the
//   last 20 s". Lines that are not errors (request logs, the rollup's reports) are never held back.

const ANSI = /\x1b\[[0-9;]*m/g;
const TABLE_START = "Your Worker has access to the following bindings:";

/** Error lines of one kind shown in full per interval before the rest are counted. */
export const SHOWN_PER_INTERVAL = 3;
export const SUMMARY_INTERVAL_MS = 20_000;

/**
 * An error line: anything on stderr, wrangler's own (✘, [ERROR]) or the worker's structured logs of
 * a failure (an `error` field, or an event named for one: `*_unavailable`, `*_failed`, `*_retry`, …).
 */
export function isErrorLine(line, stream = "stdout") {
  return stream === "stderr" || /✘|\[ERROR\]|\berror\b|_unavailable\b|_failed\b|_retry\b|_lost\b|_invalid\b|_dead_lettered\b|\bfailed\b|SQLITE_BUSY/i.test(line);
}

/**
 * What makes two error lines "the same": the worker's JSON `event`, else the line with its numbers,
 * ids and quoted values blanked (two failures of one statement differ only in those).
 */
export function errorKind(line) {
  const event = /"event"\s*:\s*"([^"]+)"/.exec(line);
  if (event) return event[1];
  return line
    .replace(ANSI, "")
    .replace(/"[^"]*"/g, '"…"')
    .replace(/\b[0-9a-f]{8,}\b/gi, "#")
    .replace(/\b\d+(\.\d+)?\b/g, "#")
    .trim();
}

/**
 * A line filter. push(line, stream) for every line wrangler prints (without the newline; stream
 * "stdout" or "stderr"); tick() from a timer, so a summary is not held back by silence; flush() at
 * the end. write(line, stream) receives what is shown (summaries on stderr); now() is the clock (ms).
 */
export function createDevOutputFilter({ write, now = Date.now, intervalMs = SUMMARY_INTERVAL_MS, shownPerInterval = SHOWN_PER_INTERVAL }) {
  let shownTable = null; // the text of the last bindings table shown
  let table = null; // lines of the table being read
  let suppressing = false; // inside a held-back multi-line error (its indented continuation lines)
  let lastBlank = false; // the last line shown was blank
  let windowStart = now();
  /** kind → { shown, held } in the current interval. */
  let kinds = new Map();

  function summarise() {
    const seconds = Math.round((now() - windowStart) / 1000);
    for (const [kind, counts] of kinds) {
      if (counts.held > 0) write(`⋯ ${kind}: ${counts.held} more in the last ${seconds} s`, "stderr");
    }
    kinds = new Map();
    windowStart = now();
  }

  function endTable() {
    const text = table.map((l) => l.replace(ANSI, "").trimEnd()).join("\n");
    if (text !== shownTable) {
      for (const l of table) write(l, "stdout");
      shownTable = text;
    }
    table = null;
  }

  function push(rawLine, stream = "stdout") {
    const line = rawLine.replace(/\r$/, "");
    const plain = line.replace(ANSI, "");
    if (now() - windowStart >= intervalMs) summarise();
    if (table) {
      // The table ends at its first blank line (or at a line that is not one of its rows).
      if (plain.trim() === "" || !/^(Binding\s|env\.|\s)/.test(plain)) {
        endTable();
      } else {
        table.push(line);
        return;
      }
    }
    if (plain.includes(TABLE_START)) {
      table = [line];
      return;
    }
    // "⎔ Connection status updated": the registry change that makes wrangler print the table again.
    if (/Connection status updated/.test(plain) && shownTable !== null) return;
    // Blank lines are never counted: after a held line they are its own (wrangler follows each
    // error with one or two), elsewhere a run of them is shown as one.
    if (plain.trim() === "") {
      if (suppressing || lastBlank) return;
      lastBlank = true;
      write(line, stream);
      return;
    }
    if (suppressing && /^\s+\S/.test(plain)) return;
    suppressing = false;
    lastBlank = false;
    if (!isErrorLine(plain, stream)) {
      write(line, stream);
      return;
    }
    const kind = errorKind(plain);
    const counts = kinds.get(kind) ?? { shown: 0, held: 0 };
    kinds.set(kind, counts);
    if (counts.shown < shownPerInterval) {
      counts.shown++;
      write(line, stream);
    } else {
      counts.held++;
      suppressing = true;
    }
  }

  return {
    push,
    tick() {
      if (now() - windowStart >= intervalMs) summarise();
    },
    flush() {
      if (table) endTable();
      summarise();
    },
  };
}
