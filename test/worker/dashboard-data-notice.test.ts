// The dashboard's banner when a project's data is incomplete (its batches wait in the ingest queue,
// or were dead-lettered) or late (as_of more than 15 minutes old) — docs/ingest.md; another
// project's backlog never shows on this one's pages.
import { env } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { INGEST_HEALTH_NAME } from "../../src/worker/health/ingest-health.ts";
import { createProject, readSessionCookie } from "./helpers/projects.ts";

async function banner(key: string, path = "/"): Promise<string | null> {
  const res = await exports.default.fetch(`http://worker${path}`, { headers: { cookie: await readSessionCookie(key) } });
  expect(res.status).toBe(200);
  const html = await res.text();
  const match = /<p class="notice" role="status" data-data-notice="true">([^<]*)<\/p>/.exec(html);
  return match ? match[1]! : null;
}

const health = () => env.INGEST_HEALTH.get(env.INGEST_HEALTH.idFromName(INGEST_HEALTH_NAME));

async function setAsOf(ms: number | null): Promise<void> {
  if (ms === null) await env.DB.prepare("DELETE FROM rollup_state WHERE name = 'as_of_ms'").run();
  else await env.DB.prepare("INSERT INTO rollup_state (name, value) VALUES ('as_of_ms', ?1) ON CONFLICT (name) DO UPDATE SET value = excluded.value").bind(ms).run();
}

describe("the data banner", () => {
  it("is absent when nothing waits and the rollup is fresh", async () => {
    const p = await createProject();
    await setAsOf(Date.now() - 5 * 60_000);
    expect(await banner(p.read_key)).toBeNull();
  });

  it("says the data is incomplete while the project's batches wait in the queue, on every page; not on another project's", async () => {
    const p = await createProject();
    const other = await createProject();
    await setAsOf(Date.now() - 60_000);
    await health().note({ kind: "queued", project_id: p.project_id, batches: 2, received_at_ms: Date.parse("2026-12-01T10:00:00Z") });
    expect(await banner(p.read_key)).toBe("Data is incomplete: 2 batches received since 2026-12-01 10:00 UTC wait to be written.");
    expect(await banner(p.read_key, "/tool?name=x")).toContain("Data is incomplete");
    expect(await banner(other.read_key)).toBeNull();
    await health().note({ kind: "written_from_queue", project_id: p.project_id, batches: 2 });
    expect(await banner(p.read_key)).toBeNull();
  });

  it("says so when batches were dead-lettered", async () => {
    const p = await createProject();
    await setAsOf(Date.now() - 60_000);
    await health().note({ kind: "dead_lettered", batch_id: `b-${p.project_id}#0`, project_id: p.project_id, received_at_ms: Date.now(), message_json: "{}" });
    expect(await banner(p.read_key)).toBe("Data is incomplete: some batches could not be written and wait for an operator.");
    await health().forgetProject(p.project_id);
  });

  it("says the data is late when as_of is more than 15 minutes old, not at 15", async () => {
    const p = await createProject();
    const asOf = Date.now() - 15 * 60_000 - 60_000;
    await setAsOf(asOf);
    expect(await banner(p.read_key)).toBe(`Data is late: complete only to ${new Date(asOf).toISOString().replace("T", " ").slice(0, 16)} UTC.`);
    await setAsOf(Date.now() - 14 * 60_000);
    expect(await banner(p.read_key)).toBeNull();
    await setAsOf(null);
    expect(await banner(p.read_key)).toBeNull();
  });
});
