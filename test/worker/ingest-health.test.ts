// The IngestHealth Durable Object (GET /v1/admin/health's source): hour counters summed over the
// last 24 hours only, the queue backlog per project (counted up when queued, down when written or
// dead-lettered, gone at zero), dead letters kept and forgotten with their project.
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { IngestHealth } from "../../src/worker/health/ingest-health.ts";

const HOUR = 3_600_000;
// A fresh object per test: its own name, so no test sees another's counters.
const fresh = () => env.INGEST_HEALTH.get(env.INGEST_HEALTH.idFromName(`health-test-${crypto.randomUUID()}`));

describe("IngestHealth", () => {
  it("sums the hours of the last 24 (the current one included) and forgets older ones", async () => {
    const stub = fresh();
    const now = Date.parse("2026-12-01T12:30:00Z");
    await runInDurableObject(stub, async (health: IngestHealth) => {
      await health.note({ kind: "write_retries", project_id: "p", count: 5 }, now - 24 * HOUR); // 2026-11-30 12:30: outside
      await health.note({ kind: "write_retries", project_id: "p", count: 3 }, now - 23 * HOUR); // 13:30 the day before: inside
      await health.note({ kind: "write_retries", project_id: "p", count: 2 }, now);
      await health.note({ kind: "refused", project_id: "p", cause: "queue_unavailable" }, now);
      await health.note({ kind: "refused", project_id: null, cause: "key_unverifiable" }, now);
      await health.note({ kind: "refused", project_id: "p", cause: "payload_budget" }, now);
      await health.note({ kind: "refused", project_id: "p", cause: "payload_budget" }, now);
      await health.note({ kind: "refused", project_id: null, cause: "failed_key" }, now);
      const snapshot = await health.snapshot(now);
      expect(snapshot.last_24h.write_retries).toBe(5);
      expect(snapshot.last_24h).toMatchObject({
        requests_refused: 2, refused_queue_unavailable: 1, refused_key_unverifiable: 1,
        requests_throttled: 3, throttled_payload_budget: 2, throttled_failed_key: 1,
      });
      // Two days later the old hours are deleted on the next note.
      await health.note({ kind: "lost", project_id: "p", batches: 1 }, now + 49 * HOUR);
      const keys = [...(await (health as unknown as { ctx: DurableObjectState }).ctx.storage.list({ prefix: "hour:" })).keys()];
      expect(keys).toHaveLength(1);
    });
  });

  it("keeps the backlog per project with its oldest receive time, down to nothing", async () => {
    const stub = fresh();
    await stub.note({ kind: "queued", project_id: "a", batches: 2, received_at_ms: 2_000 });
    await stub.note({ kind: "queued", project_id: "a", batches: 1, received_at_ms: 1_000 });
    await stub.note({ kind: "queued", project_id: "b", batches: 1, received_at_ms: 5_000 });
    let snapshot = await stub.snapshot();
    expect(snapshot.pending).toEqual([
      { project_id: "a", batches: 3, oldest_received_at_ms: 1_000 },
      { project_id: "b", batches: 1, oldest_received_at_ms: 5_000 },
    ]);
    expect(snapshot.last_24h.batches_queued).toBe(4);
    await stub.note({ kind: "written_from_queue", project_id: "a", batches: 3 });
    await stub.note({ kind: "dead_lettered", batch_id: "x#0", project_id: "b", received_at_ms: 5_000, message_json: "{}" });
    snapshot = await stub.snapshot();
    expect(snapshot.pending).toEqual([]);
    expect(snapshot.dead_letters).toEqual({ batches: 1, oldest_received_at_ms: 5_000, projects: ["b"] });
    await stub.forgetProject("b");
    expect((await stub.snapshot()).dead_letters.batches).toBe(0);
  });
});
