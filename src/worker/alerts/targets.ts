// Which URLs a destination may point at (SPEC §5), and the hint lists show instead of the URL.
// A destination URL is a secret (a Slack or Discord webhook URL is its own credential): it is stored,
// compared and fetched, never answered after creation and never logged.

/** Hosts a local worker may reach over plain http (SPEC §5): the machine itself, nothing else. */
export const LOCAL_HTTP_HOSTS = ["127.0.0.1", "localhost", "[::1]"] as const;

/**
 * Whether the worker runs locally: the `LOCAL_DEV` variable is "true". `npm run dev` sets it
 * (`wrangler dev --var LOCAL_DEV:true`); wrangler.toml never does, so a deployed worker never has it.
 */
export function runsLocally(env: { LOCAL_DEV?: string | undefined }): boolean {
  return env.LOCAL_DEV === "true";
}

export type TargetCheck = { ok: true; url: URL } | { ok: false; reason: "not_a_url" | "not_https" | "credentials_in_url" };

/** `https://` only; `http://` to 127.0.0.1, localhost or [::1] only when the worker runs locally. */
export function checkTarget(raw: string, local: boolean): TargetCheck {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: "not_a_url" };
  }
  // user:password@ would be sent as a header we never meant to send; refuse it rather than strip it.
  if (url.username !== "" || url.password !== "") return { ok: false, reason: "credentials_in_url" };
  if (url.protocol === "https:") return { ok: true, url };
  if (url.protocol === "http:" && local && (LOCAL_HTTP_HOSTS as readonly string[]).includes(url.hostname)) return { ok: true, url };
  return { ok: false, reason: "not_https" };
}

/** Characters of the URL's end that the hint keeps, when the path is long enough to spare them. */
const HINT_TAIL_CHARS = 4;
const HINT_MIN_PATH_CHARS = 16;

/**
 * What a list shows instead of the URL: scheme and host, then "…" and the last 4 characters of the
 * path when it has at least 16 (enough to tell two webhooks of one host apart, never enough to use).
 */
export function urlHint(url: URL): string {
  const path = url.pathname + url.search;
  const tail = path.length >= HINT_MIN_PATH_CHARS ? path.slice(-HINT_TAIL_CHARS) : "";
  return `${url.protocol}//${url.host}/…${tail}`;
}
