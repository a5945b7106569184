// `npm run rollup`'s work, shared with `npm run example`: triggers the rollup cron on a running local
// worker and waits until its jobs are done. `/__scheduled` (wrangler dev --test-scheduled) answers as
// soon as the scheduled handler has queued one job per database (SPEC §7), before any of them ran, so
// completion is read where the rollup writes it: each database's as_of in GET /v1/admin/health. It
// is complete up to a time T when as_of ≥ T − 1 (SPEC §2.6: as_of is the run's scheduled time when
// caught up, else just before the earliest payload still pending). A run that ran out of its
// statement budget leaves as_of behind: the cron is triggered again (the rollup is idempotent; a job
// that finds another holding the lease does nothing). Batches still in the ingest queue (its backlog
// in the same answer) are waited for too.

const ROLLUP_CRON = "*/5 * * * *";

/** What waits for the rollup in a health answer, summed over the projects behind. */
export function pendingOf(health) {
  const sum = (key) => (health.rollup?.projects_behind ?? []).reduce((n, p) => n + (p[key] ?? 0), 0);
  return { calls: sum("pending_calls"), startups: sum("pending_startups"), agreements: sum("pending_agreements"), projects: (health.rollup?.projects_behind ?? []).length };
}

/**
 * Whether every database of a health answer is complete up to `sinceMs`, with nothing left in the
 * ingest queue (batches D1 could not take at once are written from there, then rolled up).
 */
export function caughtUp(health, sinceMs) {
  const dbs = health.databases ?? [];
  return (health.queue?.backlog_batches ?? 0) === 0 &&
    dbs.length > 0 && dbs.every((d) => d.state === "ok" && d.rollup_as_of !== null && Date.parse(d.rollup_as_of) >= sinceMs - 1);
}

const plural = (n, one, many = `${one}s`) => `${n.toLocaleString("en-US")} ${n === 1 ? one : many}`;

/** One line saying what the rollup folded in, from the health answers before and after. */
export function describeRollup(before, after, { runs, seconds }) {
  const b = pendingOf(before);
  const a = pendingOf(after);
  const folded = [
    b.calls > a.calls ? plural(b.calls - a.calls, "call") : null,
    b.startups > a.startups ? plural(b.startups - a.startups, "startup") : null,
    b.agreements > a.agreements ? plural(b.agreements - a.agreements, "agreement verdict") : null,
  ].filter(Boolean);
  const what = folded.length > 0 ? `folded in ${folded.join(", ")} of ${plural(b.projects, "project")}` : "nothing was waiting";
  const asOf = (after.databases ?? []).map((d) => d.rollup_as_of).sort()[0];
  const names = (after.databases ?? []).map((d) => d.name).join(", ");
  return `Rollup done in ${seconds.toFixed(1)} s (${plural(runs, "cron run")}): ${what}; ${names} complete up to ${asOf?.replace("T", " ").replace(/\.\d+Z$/, " UTC")}.`;
}

/**
 * Triggers the rollup cron on `url` and waits until every database is complete up to the moment it
 * was asked. deps: fetch, now() (ms), sleep(ms), adminToken; timeoutMs (default 120 s), pollMs,
 * retriggerMs. Resolves { ok, message }.
 */
export async function runLocalRollup({ url, adminToken, fetch = globalThis.fetch, now = Date.now, sleep = (ms) => new Promise((r) => setTimeout(r, ms)), timeoutMs = 120_000, pollMs = 250, retriggerMs = 5_000 }) {
  const base = url.replace(/\/$/, "");
  const health = async () => {
    const res = await fetch(`${base}/v1/admin/health`, { headers: { authorization: `Bearer ${adminToken}` } });
    if (res.status === 401) throw new Error("The worker refused the ADMIN_TOKEN (401): it is not the one of .dev.vars it was started with; set ADMIN_TOKEN.");
    if (!res.ok) throw new Error(`GET /v1/admin/health answered ${res.status}.`);
    return res.json();
  };
  const trigger = async () => {
    const res = await fetch(`${base}/__scheduled?cron=${encodeURIComponent(ROLLUP_CRON)}&time=${now()}`);
    if (res.status === 404) throw new Error(`${base} does not serve /__scheduled: run the worker with \`npm run dev\` (it passes --test-scheduled).`);
    if (!res.ok) throw new Error(`/__scheduled answered ${res.status}.`);
  };
  let before;
  try {
    before = await health();
  } catch (error) {
    if (error instanceof TypeError) return { ok: false, message: `Cannot reach the worker at ${base}: start it with \`npm run dev\` first.` };
    return { ok: false, message: error.message };
  }
  const started = now();
  let runs = 0;
  let lastTrigger = -Infinity;
  let latest = before;
  try {
    while (now() - started < timeoutMs) {
      if (now() - lastTrigger >= retriggerMs) {
        await trigger();
        runs++;
        lastTrigger = now();
      }
      await sleep(pollMs);
      latest = await health();
      if (caughtUp(latest, started)) {
        return { ok: true, message: describeRollup(before, latest, { runs, seconds: (now() - started) / 1000 }) };
      }
    }
  } catch (error) {
    return { ok: false, message: error.message };
  }
  const behind = (latest.databases ?? []).map((d) => `${d.name} ${d.state === "ok" ? `complete up to ${d.rollup_as_of ?? "never"}` : "unavailable"}`).join(", ");
  return { ok: false, message: `The rollup has not caught up after ${Math.round(timeoutMs / 1000)} s (${plural(runs, "cron run")}; ${behind}; ${plural(pendingOf(latest).calls, "call")} still waiting): the cron goes on every 5 minutes, and GET /v1/admin/health shows what waits.` };
}
