// The worker's one logger: a JSON object per line, `{"event":…` first (scripts find lines by it), then
// level and the request or invocation id (AsyncLocalStorage, so waitUntil work keeps it). Fields are
// ids, counts and error names — never request values, which could quote user data.
import { AsyncLocalStorage } from "node:async_hooks";

/** What a line is tied to: an HTTP request (its id is the `X-Request-Id` the answer carries), or a queue message or cron trigger. */
export type LogScope = { request_id: string } | { invocation_id: string };

export type LogLevel = "info" | "error";

/** An event's own fields: ids, counts, names — JSON-serialisable. */
export type LogFields = Record<string, unknown>;

const scopes = new AsyncLocalStorage<LogScope>();

/** Runs `fn` with every line it logs (and everything it awaits or leaves to waitUntil) tied to `scope`. */
export function withLogScope<T>(scope: LogScope, fn: () => T): T {
  return scopes.run(scope, fn);
}

/** The scope lines are tied to now, if any (none outside a request, a queue message or a cron run). */
export function currentLogScope(): LogScope | undefined {
  return scopes.getStore();
}

/**
 * A cron trigger's id: its scheduled time and cron (at 03:30 both crons fire for the same minute).
 * A retried trigger keeps it: the same scheduled work.
 */
export function scheduledInvocationId(cron: string, scheduledTimeMs: number): string {
  return `scheduled:${new Date(scheduledTimeMs).toISOString()}:${cron}`;
}

/**
 * A queue delivery's id: the queue and its first message's id (and how many more it holds). Each
 * message's own lines are tied to the message's id (the one Cloudflare's queue dashboard shows);
 * what the consumer logs for the whole delivery carries this one.
 */
export function queueInvocationId(batch: MessageBatch<unknown>): string {
  const [first] = batch.messages;
  const more = batch.messages.length - 1;
  return `${batch.queue}:${first?.id ?? "empty"}${more > 0 ? `+${more}` : ""}`;
}

/** The one log line: `{"event", "level", "request_id" | "invocation_id", ...fields}`. */
export function logLine(level: LogLevel, event: string, fields: LogFields = {}): string {
  return JSON.stringify({ event, level, ...scopes.getStore(), ...fields });
}

/**
 * The logger. `info` goes to console.log and `error` to console.error, so Workers Logs (and `wrangler
 * tail`) show each line at its level.
 */
export const log = {
  info(event: string, fields?: LogFields): void {
    console.log(logLine("info", event, fields));
  },
  error(event: string, fields?: LogFields): void {
    console.error(logLine("error", event, fields));
  },
};

/** How a log line names an error: its class name (`Error`, `TypeError`…) or, for a thrown non-error, its type, never its message, which may quote stored values. */
export function errorName(err: unknown): string {
  return err instanceof Error ? err.name : typeof err;
}
