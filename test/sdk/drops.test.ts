// Nothing is dropped silently (SPEC §3, §4): every payload the SDK gives up on is counted by reason
// and reported on stderr whatever `debug` says — at most one line a minute per destination, merged
// so the counts add up; a Retry-After past the age limit said at once, and nothing sent inside it;
// the server's `error` text in the line; the exit flush's losses reported before the process ends.
// The report runs on an injected clock, the buffer on vitest's fake one; the end-to-end cases send
// to a real local HTTP server and a real child process.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, onTestFinished, test, vi } from "vitest";
import { DEFAULT_BUFFER_TUNING, PayloadBuffer } from "../../src/sdk/buffer.ts";
import { destinationFor, setTransportOverridesForTests } from "../../src/sdk/destination.ts";
import {
  DROP_REASONS,
  DROP_REPORT_INTERVAL_MS,
  DropReporter,
  MAX_DROP_REASONS,
  OTHER_REASON,
  realReportClock,
  type ReportClock,
} from "../../src/sdk/drops.ts";
import { MAX_ERROR_TEXT_CHARS, RETRY_MAX_AGE_MS, describeAnswer, errorTextOf, type SendOutcome } from "../../src/sdk/retry.ts";
import { startCaptureServer, type CaptureMode } from "./helpers/capture-server.ts";

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
  setTransportOverridesForTests({});
});

/** A clock the test moves by hand; its timers run when it passes their time. */
function manualClock(startMs = 1_000_000) {
  let nowMs = startMs;
  const timers: { atMs: number; run: () => void; live: boolean }[] = [];
  const clock: ReportClock = {
    now: () => nowMs,
    schedule(run, ms) {
      const timer = { atMs: nowMs + ms, run, live: true };
      timers.push(timer);
      return () => {
        timer.live = false;
      };
    },
  };
  return {
    clock,
    advance(ms: number) {
      const untilMs = nowMs + ms;
      for (;;) {
        const due = timers.filter((t) => t.live && t.atMs <= untilMs).sort((a, b) => a.atMs - b.atMs)[0];
        if (!due) break;
        nowMs = due.atMs;
        due.live = false;
        due.run();
      }
      nowMs = untilMs;
    },
    liveTimers: () => timers.filter((t) => t.live).length,
    now: () => nowMs,
  };
}

function reporterOnManualClock() {
  const manual = manualClock();
  const lines: { atMs: number; text: string }[] = [];
  const reporter = new DropReporter("http://127.0.0.1:9/v1/ingest", (text) => lines.push({ atMs: manual.now(), text }), manual.clock);
  return { ...manual, reporter, lines, texts: () => lines.map((line) => line.text) };
}

/** The payload counts a report line names, added up: "gave up on N payload(s)". */
const countOf = (line: string) => Number(/^gave up on (\d+) payload\(s\)/.exec(line)?.[1] ?? Number.NaN);

describe("the report: once a minute per destination, merged, nothing lost from the counts", () => {
  test("the first drop is written at once; later ones within the minute are merged into one line at the minute", () => {
    const { reporter, texts, advance, liveTimers } = reporterOnManualClock();
    reporter.record("age limit of 10 minutes reached", 3);
    expect(texts()).toEqual(["gave up on 3 payload(s) for http://127.0.0.1:9/v1/ingest: 3 age limit of 10 minutes reached"]);
    advance(10_000);
    reporter.record("buffer full", 2);
    reporter.record("age limit of 10 minutes reached", 5);
    expect(reporter.unreported).toBe(7);
    expect(liveTimers()).toBe(1); // one timer, however many drops
    advance(49_999);
    expect(texts()).toHaveLength(1);
    advance(1);
    expect(texts()[1]).toBe("gave up on 7 payload(s) for http://127.0.0.1:9/v1/ingest since the last report: 2 buffer full; 5 age limit of 10 minutes reached");
    expect(reporter.unreported).toBe(0);
    expect(reporter.counts()).toEqual({ total: 10, byReason: { "age limit of 10 minutes reached": 8, "buffer full": 2 } });
  });

  test("a drop 60 s after the last line is written at once; 1 ms earlier it waits for the minute", () => {
    const { reporter, lines, advance } = reporterOnManualClock();
    reporter.record("r", 1);
    advance(DROP_REPORT_INTERVAL_MS - 1);
    reporter.record("r", 1);
    expect(lines).toHaveLength(1);
    advance(1);
    expect(lines).toHaveLength(2);
    advance(DROP_REPORT_INTERVAL_MS);
    reporter.record("r", 1);
    expect(lines).toHaveLength(3);
    expect(lines[2]!.atMs - lines[1]!.atMs).toBe(DROP_REPORT_INTERVAL_MS);
  });

  test("a drop every second for 10 minutes: at most one line a minute, and the lines add up to every payload", () => {
    const { reporter, lines, advance } = reporterOnManualClock();
    for (let second = 0; second < 600; second++) {
      reporter.record(second % 2 === 0 ? "even" : "odd", 1);
      advance(1_000);
    }
    reporter.writePending();
    expect(lines.length).toBeLessThanOrEqual(1 + 600_000 / DROP_REPORT_INTERVAL_MS + 1);
    for (let i = 1; i < lines.length - 1; i++) expect(lines[i]!.atMs - lines[i - 1]!.atMs).toBeGreaterThanOrEqual(DROP_REPORT_INTERVAL_MS);
    expect(lines.reduce((sum, line) => sum + countOf(line.text), 0)).toBe(600);
    expect(reporter.counts()).toEqual({ total: 600, byReason: { even: 300, odd: 300 } });
  });

  test("reportNow writes at once within the minute, with what was pending", () => {
    const { reporter, texts, advance, liveTimers } = reporterOnManualClock();
    reporter.record("a", 1);
    advance(1_000);
    reporter.record("b", 2);
    reporter.record("c", 4, true);
    expect(texts()).toHaveLength(2);
    expect(texts()[1]).toMatch(/^gave up on 6 payload\(s\) .* since the last report: 2 b; 4 c$/);
    expect(liveTimers()).toBe(0);
  });

  test("writePending writes at once and stops the timer; with nothing pending it writes nothing", () => {
    const { reporter, texts, advance, liveTimers } = reporterOnManualClock();
    reporter.writePending();
    expect(texts()).toEqual([]);
    reporter.record("a", 1);
    reporter.record("a", 1);
    expect(liveTimers()).toBe(1);
    reporter.writePending();
    expect(texts()).toHaveLength(2);
    expect(liveTimers()).toBe(0);
    advance(120_000);
    expect(texts()).toHaveLength(2);
  });

  test("zero payloads are no drop", () => {
    const { reporter, texts } = reporterOnManualClock();
    reporter.record("a", 0);
    expect(texts()).toEqual([]);
    expect(reporter.counts().total).toBe(0);
  });

  test(`${MAX_DROP_REASONS} distinct reasons are kept apart; past that the rest count as "${OTHER_REASON}"`, () => {
    const { reporter, texts } = reporterOnManualClock();
    reporter.record("first", 1); // written at once; the next minute gathers the rest
    for (let i = 0; i < MAX_DROP_REASONS; i++) reporter.record(`reason ${i}`, 1);
    reporter.writePending();
    expect(texts()[1]).not.toContain(OTHER_REASON);
    for (let i = 0; i < MAX_DROP_REASONS + 2; i++) reporter.record(`reason ${i + 100}`, 1);
    reporter.writePending();
    expect(texts()[2]).toContain(`; 2 ${OTHER_REASON}`);
    expect(countOf(texts()[2]!)).toBe(MAX_DROP_REASONS + 2);
    expect(reporter.counts().total).toBe(1 + MAX_DROP_REASONS + MAX_DROP_REASONS + 2);
    expect(Object.keys(reporter.counts().byReason)).toHaveLength(MAX_DROP_REASONS + 1);
  });

  test("the report's real timer never keeps the process alive (unref'd)", () => {
    const setTimeoutSpy = vi.spyOn(globalThis, "setTimeout");
    const cancel = realReportClock.schedule(() => {}, DROP_REPORT_INTERVAL_MS);
    const timer = setTimeoutSpy.mock.results[0]!.value as NodeJS.Timeout;
    expect(timer.hasRef()).toBe(false);
    cancel();
  });
});

describe("the server's error text in the line", () => {
  test("error and code from the worker's error body (src/worker/errors.ts)", () => {
    expect(errorTextOf('{"error":"payload budget exceeded","code":"TOO_MANY_REQUESTS"}')).toBe('"payload budget exceeded", TOO_MANY_REQUESTS');
    expect(errorTextOf('{"error":"internal error"}')).toBe('"internal error"');
    expect(describeAnswer({ status: 429, retryAfterMs: 900_000, errorBody: '{"error":"too many failed sign-ins","code":"TOO_MANY_REQUESTS"}' })).toBe(
      'ingest answered 429 ("too many failed sign-ins", TOO_MANY_REQUESTS)',
    );
    expect(describeAnswer({ status: 502, retryAfterMs: null, errorBody: "<html>Bad gateway</html>" })).toBe("ingest answered 502");
    expect(describeAnswer(404)).toBe("ingest answered 404");
  });

  test("control and format characters are stripped: no terminal escapes, no newlines, no bidi overrides", () => {
    expect(errorTextOf(JSON.stringify({ error: "bad\u001b[2J\u0007\nnext\u202eline\u2028end\t" }))).toBe('"bad [2J next line end"');
    expect(errorTextOf(JSON.stringify({ error: "\u0000\u001b" }))).toBeNull();
  });

  test(`cut at ${MAX_ERROR_TEXT_CHARS} characters: at the limit kept whole, one over cut with an ellipsis`, () => {
    const under = "a".repeat(MAX_ERROR_TEXT_CHARS - 1);
    const at = "b".repeat(MAX_ERROR_TEXT_CHARS);
    const over = "c".repeat(MAX_ERROR_TEXT_CHARS + 1);
    expect(errorTextOf(JSON.stringify({ error: under }))).toBe(`"${under}"`);
    expect(errorTextOf(JSON.stringify({ error: at }))).toBe(`"${at}"`);
    expect(errorTextOf(JSON.stringify({ error: over }))).toBe(`"${"c".repeat(MAX_ERROR_TEXT_CHARS - 1)}…"`);
  });

  test("anything but {error: string} is not repeated; a code that is not of capitals and underscores is left out", () => {
    for (const body of [null, "", "not json", "[]", "null", '"text"', '{"error":5}', '{"message":"x"}']) expect(errorTextOf(body)).toBeNull();
    expect(errorTextOf('{"error":"x","code":"lower"}')).toBe('"x"');
    expect(errorTextOf(`{"error":"x","code":"${"A".repeat(41)}"}`)).toBe('"x"');
    expect(errorTextOf(`{"error":"x","code":"${"A".repeat(40)}"}`)).toBe(`"x", ${"A".repeat(40)}`);
  });
});

const item = (seq: number) => ({ v: 1, type: "call", seq });
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);
type Answer = SendOutcome | (() => Promise<SendOutcome>);

/** A buffer on the fake clock whose sends answer from `answers` (then "sent"), recording attempts and drops. */
function bufferAnswering(answers: Answer[], tuning = {}) {
  const attempts: { atMs: number; seqs: number[]; key: string; final: boolean }[] = [];
  const drops: { reason: string; payloads: number; now: boolean }[] = [];
  const buffer = new PayloadBuffer(
    async (batch, final, idempotencyKey) => {
      attempts.push({ atMs: Date.now(), seqs: batch.map((p) => (p as { seq: number }).seq), key: idempotencyKey, final });
      const answer = answers.shift() ?? "sent";
      return typeof answer === "function" ? answer() : answer;
    },
    { ...DEFAULT_BUFFER_TUNING, ...tuning },
    (reason, payloads, now) => drops.push({ reason, payloads, now }),
  );
  buffer.random = () => 0.5;
  const dropped = () => drops.reduce((sum, drop) => sum + drop.payloads, 0);
  return { buffer, attempts, drops, dropped };
}

const BUDGET_429 = 'ingest answered 429 ("payload budget exceeded", TOO_MANY_REQUESTS)';
const retryAfter = (ms: number, cause = BUDGET_429): SendOutcome => ({ retry: true, retryAfterMs: ms, cause });
const failing503: SendOutcome = { retry: true, retryAfterMs: null, cause: "ingest answered 503" };

describe("every path that gives payloads up reports them (fake clock)", () => {
  test("age limit: a batch still failing at 10 minutes is reported with its last failure", async () => {
    vi.useFakeTimers();
    const { buffer, drops, dropped } = bufferAnswering(Array.from({ length: 100 }, () => failing503));
    for (let i = 0; i < 30; i++) buffer.add(item(i));
    await vi.advanceTimersByTimeAsync(RETRY_MAX_AGE_MS + 120_000);
    expect(drops).toEqual([{ reason: "age limit of 10 minutes reached (last: ingest answered 503)", payloads: 30, now: false }]);
    expect(dropped()).toBe(buffer.droppedPayloads);
  });

  test("a 4xx that can never succeed, with its status and the server's text; a bare drop too", async () => {
    vi.useFakeTimers();
    const { buffer, drops } = bufferAnswering([{ drop: true, cause: 'ingest answered 401 ("unauthorized", UNAUTHORIZED)' }, "drop"]);
    for (let i = 0; i < 30; i++) buffer.add(item(i));
    await vi.advanceTimersByTimeAsync(0);
    for (let i = 30; i < 35; i++) buffer.add(item(i));
    await vi.advanceTimersByTimeAsync(5_000);
    expect(drops).toEqual([
      { reason: 'ingest answered 401 ("unauthorized", UNAUTHORIZED), which can never succeed', payloads: 30, now: false },
      { reason: "ingest refused the batch, which can never succeed", payloads: 5, now: false },
    ]);
  });

  test("the 1,000 bound: 1,000 held drop nothing, each one more drops one (oldest)", () => {
    const { buffer, drops, dropped } = bufferAnswering([], { flushAtPayloads: 10_000, flushIntervalMs: 600_000 });
    for (let i = 0; i < 1_000; i++) buffer.add(item(i));
    expect(drops).toEqual([]);
    buffer.add(item(1_000));
    expect(drops).toEqual([{ reason: DROP_REASONS.bound(1_000), payloads: 1, now: false }]);
    expect(drops[0]!.reason).toBe("buffer full (1,000 held, oldest dropped)");
    for (let i = 1_001; i < 1_005; i++) buffer.add(item(i));
    expect(dropped()).toBe(5);
    expect(buffer.size).toBe(1_000);
  });

  test("the 1,000 bound when a failed batch comes back to a full buffer: its payloads are counted", async () => {
    vi.useFakeTimers();
    let fail!: (outcome: SendOutcome) => void;
    const { buffer, drops } = bufferAnswering([() => new Promise<SendOutcome>((resolve) => (fail = resolve))], { flushIntervalMs: 600_000, flushAtPayloads: 30 });
    for (let i = 0; i < 30; i++) buffer.add(item(i));
    await vi.advanceTimersByTimeAsync(0); // in flight
    for (let i = 30; i < 1_030; i++) buffer.add(item(i)); // 1,000 waiting beside the 30 in flight
    expect(drops).toEqual([]);
    fail(failing503);
    await vi.advanceTimersByTimeAsync(0);
    expect(drops).toEqual([{ reason: "buffer full (1,000 held, oldest dropped)", payloads: 30, now: false }]);
  });

  test("a send that throws before any request: reported as not sendable", async () => {
    vi.useFakeTimers();
    const { buffer, drops } = bufferAnswering([() => Promise.reject(new Error("cannot serialise"))]);
    for (let i = 0; i < 30; i++) buffer.add(item(i));
    await vi.advanceTimersByTimeAsync(0);
    expect(drops).toEqual([{ reason: "could not be sent (cannot serialise)", payloads: 30, now: false }]);
  });
});

describe("a Retry-After past the age limit", () => {
  test("900 s: the whole batch is reported at once with the status, the Retry-After and the count; nothing is sent inside it", async () => {
    vi.useFakeTimers();
    const { buffer, attempts, drops } = bufferAnswering([retryAfter(900_000)]);
    const t0 = Date.now();
    for (let i = 0; i < 30; i++) buffer.add(item(i));
    await vi.advanceTimersByTimeAsync(0);
    expect(drops).toEqual([
      { reason: `${BUDGET_429} with Retry-After 900 s, past their 10-minute age limit`, payloads: 30, now: true },
    ]);
    // 60 more arrive: neither the 30-payload flush nor the 5 s interval asks the ingest again inside the 900 s.
    for (let i = 30; i < 90; i++) buffer.add(item(i));
    expect(buffer.holding).toBe(true);
    buffer.flush();
    expect(buffer.sending).toBe(false);
    await vi.advanceTimersByTimeAsync(900_000 - 1);
    expect(attempts).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(attempts.map((a) => a.atMs - t0)).toEqual([0, 900_000]);
    expect(attempts[1]!.seqs).toEqual(range(30, 90));
    await vi.advanceTimersByTimeAsync(0);
    expect(buffer.size).toBe(0);
    expect(drops).toHaveLength(1);
  });

  test("at the limit and just under: 600,000 ms costs the batch, 599,999 ms keeps it for a retry with its key", async () => {
    vi.useFakeTimers();
    const at = bufferAnswering([retryAfter(RETRY_MAX_AGE_MS)]);
    for (let i = 0; i < 30; i++) at.buffer.add(item(i));
    await vi.advanceTimersByTimeAsync(0);
    expect(at.drops.map((d) => [d.payloads, d.now])).toEqual([[30, true]]);

    const under = bufferAnswering([retryAfter(RETRY_MAX_AGE_MS - 1)]);
    for (let i = 0; i < 30; i++) under.buffer.add(item(i));
    await vi.advanceTimersByTimeAsync(RETRY_MAX_AGE_MS - 2);
    expect(under.attempts).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(under.attempts).toHaveLength(2);
    expect(under.attempts[1]!.key).toBe(under.attempts[0]!.key);
    expect(under.drops).toEqual([]);
  });

  test("only the payloads it outlasts are given up; the younger ones are retried when it ends, with the same key", async () => {
    vi.useFakeTimers();
    const { buffer, attempts, drops } = bufferAnswering([retryAfter(450_000)], { flushAtPayloads: 20, flushIntervalMs: 600_000 });
    const t0 = Date.now();
    for (let i = 0; i < 10; i++) buffer.add(item(i));
    await vi.advanceTimersByTimeAsync(200_000);
    for (let i = 10; i < 20; i++) buffer.add(item(i)); // the 20th sends all 20, the first ten 200 s old
    await vi.advanceTimersByTimeAsync(0);
    expect(drops).toEqual([{ reason: `${BUDGET_429} with Retry-After 450 s, past their 10-minute age limit`, payloads: 10, now: true }]);
    await vi.advanceTimersByTimeAsync(450_000);
    expect(attempts.map((a) => [a.atMs - t0, a.seqs])).toEqual([
      [200_000, range(0, 20)],
      [650_000, range(10, 20)],
    ]);
    expect(attempts[1]!.key).toBe(attempts[0]!.key);
  });

  test("a short Retry-After holds back the waiting payloads too, then they go", async () => {
    vi.useFakeTimers();
    const { buffer, attempts, drops } = bufferAnswering([retryAfter(30_000, "ingest answered 503")]);
    const t0 = Date.now();
    for (let i = 0; i < 30; i++) buffer.add(item(i));
    await vi.advanceTimersByTimeAsync(0);
    for (let i = 30; i < 60; i++) buffer.add(item(i));
    await vi.advanceTimersByTimeAsync(30_000);
    expect(attempts.map((a) => [a.atMs - t0, a.seqs.length])).toEqual([[0, 30], [30_000, 30], [30_000, 30]]);
    expect(drops).toEqual([]);
  });
});

describe("the exit flush reports what it could not deliver", () => {
  test("inside a Retry-After it asks nothing and gives up what it holds, saying why", async () => {
    vi.useFakeTimers();
    const { buffer, attempts, drops } = bufferAnswering([retryAfter(900_000)]);
    for (let i = 0; i < 30; i++) buffer.add(item(i));
    await vi.advanceTimersByTimeAsync(0);
    for (let i = 30; i < 35; i++) buffer.add(item(i));
    const done = buffer.flushFinal(1_000);
    await vi.advanceTimersByTimeAsync(0);
    await done;
    expect(attempts).toHaveLength(1);
    expect(drops[1]).toEqual({ reason: `exit before the ingest's Retry-After ended (${BUDGET_429})`, payloads: 5, now: false });
    expect(buffer.size).toBe(0);
  });

  test("a final send that fails is reported with its cause", async () => {
    vi.useFakeTimers();
    const { buffer, drops } = bufferAnswering([failing503], { flushIntervalMs: 600_000 });
    for (let i = 0; i < 7; i++) buffer.add(item(i));
    const done = buffer.flushFinal(1_000);
    await vi.advanceTimersByTimeAsync(0);
    await done;
    expect(drops).toEqual([{ reason: "exit flush failed (ingest answered 503)", payloads: 7, now: false }]);
  });

  test("past its 1 s: the send still unanswered and everything not yet sent are reported", async () => {
    vi.useFakeTimers();
    const hang = () => new Promise<SendOutcome>(() => {});
    const { buffer, attempts, drops } = bufferAnswering([hang], { flushIntervalMs: 600_000, flushAtPayloads: 10_000, maxPerRequest: 10 });
    for (let i = 0; i < 25; i++) buffer.add(item(i));
    const done = buffer.flushFinal(1_000);
    await vi.advanceTimersByTimeAsync(1_000);
    await done;
    expect(attempts).toHaveLength(1);
    expect(drops).toEqual([
      { reason: "exit flush out of time (1 s: not sent or not confirmed)", payloads: 10, now: false },
      { reason: "exit flush out of time (1 s: not sent or not confirmed)", payloads: 15, now: false },
    ]);
  });

  test("an ordinary send still unanswered at the deadline is reported once, and not retried when its answer comes late", async () => {
    vi.useFakeTimers();
    let answer!: (outcome: SendOutcome) => void;
    const { buffer, attempts, drops } = bufferAnswering([() => new Promise<SendOutcome>((resolve) => (answer = resolve))], { flushIntervalMs: 600_000 });
    for (let i = 0; i < 30; i++) buffer.add(item(i));
    await vi.advanceTimersByTimeAsync(0); // in flight, unanswered
    for (let i = 30; i < 33; i++) buffer.add(item(i));
    const done = buffer.flushFinal(1_000);
    await vi.advanceTimersByTimeAsync(1_000);
    await done;
    const outOfTime = "exit flush out of time (1 s: not sent or not confirmed)";
    expect(drops).toEqual([
      { reason: outOfTime, payloads: 30, now: false },
      { reason: outOfTime, payloads: 3, now: false },
    ]);
    answer(failing503);
    await vi.advanceTimersByTimeAsync(120_000);
    expect(attempts).toHaveLength(1);
    expect(drops).toHaveLength(2);
  });

  test("process.exit() (no exit flush): what is held and the send not yet answered are given up at once, once", async () => {
    vi.useFakeTimers();
    let answer!: (outcome: SendOutcome) => void;
    const { buffer, attempts, drops } = bufferAnswering([() => new Promise<SendOutcome>((resolve) => (answer = resolve))], { flushIntervalMs: 600_000 });
    for (let i = 0; i < 30; i++) buffer.add(item(i));
    await vi.advanceTimersByTimeAsync(0); // in flight, unanswered
    for (let i = 30; i < 34; i++) buffer.add(item(i));
    buffer.giveUpAtExit();
    const abrupt = "process exited before they were sent or confirmed";
    expect(drops).toEqual([
      { reason: abrupt, payloads: 30, now: false },
      { reason: abrupt, payloads: 4, now: false },
    ]);
    expect(buffer.size).toBe(0);
    buffer.giveUpAtExit();
    answer(failing503);
    await vi.advanceTimersByTimeAsync(120_000);
    expect(drops).toHaveLength(2);
    expect(attempts).toHaveLength(1);
  });

  test("a final flush that delivers everything reports nothing", async () => {
    vi.useFakeTimers();
    const { buffer, drops } = bufferAnswering([], { flushIntervalMs: 600_000 });
    for (let i = 0; i < 7; i++) buffer.add(item(i));
    const done = buffer.flushFinal(1_000);
    await vi.advanceTimersByTimeAsync(0);
    await done;
    expect(drops).toEqual([]);
  });
});

// ---- against a real local HTTP server, whatever `debug` says ----

let keys = 0;
/** An ingest key of the usual shape (mp_live_ + 32), so the line names its key id. */
const ingestKey = () => `mp_live_drops${String(++keys).padStart(3, "0")}${"x".repeat(24)}`;

async function capture(mode: CaptureMode) {
  const server = await startCaptureServer(mode);
  onTestFinished(() => server.close());
  return server;
}

function stderrLines() {
  const lines: string[] = [];
  vi.spyOn(process.stderr, "write").mockImplementation((chunk: unknown) => {
    lines.push(...String(chunk).split("\n").filter((line) => line.length > 0));
    return true;
  });
  return lines;
}

async function until(condition: () => boolean, what: string, timeoutMs = 5_000) {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe("end to end, debug off", () => {
  test("a 429 with Retry-After 900 (the measured case): said at once with the worker's text, and the ingest is not asked again inside it", async () => {
    const ingest = await capture("fail429");
    ingest.retryAfter = "900";
    ingest.errorBody = JSON.stringify({ error: "payload budget exceeded\u001b[2J", code: "TOO_MANY_REQUESTS" });
    const manual = manualClock();
    setTransportOverridesForTests({ reportClock: manual.clock });
    const lines = stderrLines();
    const key = ingestKey();
    const destination = destinationFor(ingest.url, key);
    for (let i = 0; i < 30; i++) destination.enqueue(item(i));
    await until(() => lines.length > 0, "the report line");
    expect(lines).toEqual([
      `[mcpulse] gave up on 30 payload(s) for ${ingest.url}/v1/ingest (key ${key.slice(0, 16)}…): 30 ingest answered 429 ("payload budget exceeded [2J", TOO_MANY_REQUESTS) with Retry-After 900 s, past their 10-minute age limit`,
    ]);
    expect(lines.join("\n")).not.toContain(key);
    for (let i = 30; i < 61; i++) destination.enqueue(item(i));
    destination.buffer.flush();
    expect(destination.buffer.sending).toBe(false);
    expect(ingest.requests).toHaveLength(1);
    // The process ends inside the 900 s: what it holds is given up and said so before it ends.
    await destination.buffer.flushFinal(1_000);
    destination.drops.writePending();
    expect(ingest.requests).toHaveLength(1);
    expect(lines[1]).toMatch(/ since the last report: 31 exit before the ingest's Retry-After ended \(ingest answered 429 \("payload budget exceeded \[2J", TOO_MANY_REQUESTS\)\)$/);
    expect(destination.drops.counts().total).toBe(61);
  });

  test("a 400 is reported with the server's text; a second within the minute waits and is merged", async () => {
    const ingest = await capture("reject400");
    ingest.errorBody = JSON.stringify({ error: "invalid body", code: "BAD_REQUEST" });
    const manual = manualClock();
    setTransportOverridesForTests({ reportClock: manual.clock });
    const lines = stderrLines();
    const destination = destinationFor(ingest.url, ingestKey());
    for (let i = 0; i < 30; i++) destination.enqueue(item(i));
    await until(() => lines.length > 0, "the first line");
    expect(lines[0]).toMatch(/: 30 ingest answered 400 \("invalid body", BAD_REQUEST\), which can never succeed$/);
    manual.advance(30_000);
    for (let i = 30; i < 60; i++) destination.enqueue(item(i));
    await until(() => destination.drops.unreported === 30, "the second drop");
    expect(lines).toHaveLength(1);
    manual.advance(30_000);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatch(/since the last report: 30 ingest answered 400 \("invalid body", BAD_REQUEST\), which can never succeed$/);
  });
});

const EXIT_CHILD = fileURLToPath(new URL("./helpers/exit-child.ts", import.meta.url));

// The child runs the SDK's TypeScript directly, which takes Node 22 (type stripping); the test files
// under Node 20 run everything else.
const childRunsTypeScript = Number(process.versions.node.split(".")[0]) >= 22;

test.skipIf(!childRunsTypeScript)("a child process answered 429 Retry-After 900 says what every payload cost before it ends, the exit's share too", { timeout: 20_000 }, async () => {
  const ingest = await capture("fail429");
  ingest.retryAfter = "900";
  ingest.errorBody = JSON.stringify({ error: "payload budget exceeded", code: "TOO_MANY_REQUESTS" });
  // 51 calls and the startup go in one batch; 5 more wait behind it; then the process has nothing left to do.
  const child = spawn(process.execPath, [EXIT_CHILD, ingest.url, ingestKey(), "51+5", "idle"], { stdio: ["ignore", "ignore", "pipe"] });
  onTestFinished(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.on("exit", (exitCode) => resolve(exitCode)));
  expect(code, stderr).toBe(0);
  const lines = stderr.split("\n").filter((line) => line.startsWith("[mcpulse] gave up on"));
  expect(ingest.requests).toHaveLength(1);
  expect(ingest.requests[0]!.batch).toHaveLength(52);
  // Every payload is in a line: the 52 refused for 900 s said at once and the 5 held given up at
  // exit, merged into a line written before the process ended — or, when the answer came after the
  // exit flush's 1 s, all 57 as out of time. Never fewer.
  expect(lines.length, stderr).toBeGreaterThanOrEqual(1);
  expect(lines.length, stderr).toBeLessThanOrEqual(2);
  expect(lines.reduce((sum, line) => sum + countOf(line.replace("[mcpulse] ", "")), 0), stderr).toBe(57);
  if (lines[0]!.includes("Retry-After 900 s")) {
    expect(lines[0]).toContain('52 ingest answered 429 ("payload budget exceeded", TOO_MANY_REQUESTS) with Retry-After 900 s');
    expect(lines[1]).toMatch(/since the last report: 5 exit before the ingest's Retry-After ended/);
  }
});

test.skipIf(!childRunsTypeScript)("process.exit() skips the exit flush: the payloads it costs are still reported before the process ends", { timeout: 20_000 }, async () => {
  const ingest = await capture("accept");
  const child = spawn(process.execPath, [EXIT_CHILD, ingest.url, ingestKey(), "5", "exit"], { stdio: ["ignore", "ignore", "pipe"] });
  onTestFinished(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.on("exit", (exitCode) => resolve(exitCode)));
  expect(code, stderr).toBe(0);
  // 5 calls and the startup, fewer than 30 and inside the 5 s interval: never sent, all reported.
  expect(stderr.trim()).toMatch(/^\[mcpulse\] gave up on 6 payload\(s\) for \S+\/v1\/ingest \(key mp_live_drops\d{3}…\): 6 process exited before they were sent or confirmed$/);
  expect(ingest.requests).toHaveLength(0);
});
