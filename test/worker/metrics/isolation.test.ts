// Security: a read key of project B never sees project A's data, on any endpoint or filter.
import { describe, expect, it } from "vitest";
import { createProject } from "../helpers/projects.ts";
import {
  dayMs, getJson, seedAgreement, seedDeclaration, seedHour, seedPair, seedRegistered, seedSession, seedVersion,
} from "./seed.ts";

const ENDPOINTS = ["tools", "clients", "pairs", "sessions", "timeseries", "descriptions", "agreement", "insights", "schema-regressions"];

async function seedProject(projectId: string, prefix: string): Promise<void> {
  const t = dayMs("2026-11-20");
  await seedHour({ projectId, hourMs: t, tool: `${prefix}_tool`, client: `${prefix}_client`, counters: { calls: 30, ok: 10, first_call_attempts: 30, first_call_ok: 1 } });
  await seedHour({ projectId, hourMs: t, tool: "shared_name", client: "shared_client", counters: { calls: prefix === "alpha" ? 987654 : 7, ok: 1 } });
  await seedRegistered(projectId, `${prefix}_dead`, { schemaBytes: 4000, descriptionNorm: "999999999999" });
  await seedRegistered(projectId, `${prefix}_twin`, { descriptionNorm: "999999999999", schemaHash: "ffff" });
  await seedVersion(projectId, `${prefix}_twin`, { schemaHash: "eeee", descriptionHash: "d1", firstSeenMs: t - 86_400_000, lastSeenMs: t - 86_400_000 });
  await seedVersion(projectId, `${prefix}_twin`, { schemaHash: "ffff", descriptionHash: "d1", firstSeenMs: t, lastSeenMs: t });
  await seedVersion(projectId, `${prefix}_twin`, { schemaHash: "ffff", descriptionHash: "d2", firstSeenMs: t, lastSeenMs: t });
  await seedPair(projectId, "2026-11-20", `${prefix}_client`, `${prefix}_tool`, "shared_name", 5);
  await seedSession(projectId, `${prefix}_session`, { firstSeenMs: t, client: `${prefix}_client`, calls: 30, responseBytes: 10, schemaBytes: 10 });
  await seedAgreement(projectId, "2026-11-20", `${prefix}_field`, `${prefix}_tool`, "shared_name", 3, 1);
  await seedDeclaration(projectId, `${prefix}_silent`, `${prefix}_tool`);
}

describe("isolation between projects", () => {
  it("answers project B's key with B's data only, whatever the filters", async () => {
    const a = await createProject("alpha");
    const b = await createProject("beta");
    await seedProject(a.project_id, "alpha");
    await seedProject(b.project_id, "beta");
    const range = "from=2026-11-14&to=2026-11-20";
    for (const endpoint of ENDPOINTS) {
      const ranged = !["descriptions", "schema-regressions"].includes(endpoint);
      const path = `/v1/metrics/${endpoint}${ranged ? `?${range}` : ""}`;
      const forB = JSON.stringify((await getJson(path, b.read_key)).body);
      expect(forB, endpoint).not.toContain("alpha");
      expect(forB, endpoint).not.toContain("987654");
      const forA = JSON.stringify((await getJson(path, a.read_key)).body);
      expect(forA, endpoint).not.toContain("beta");
    }
    // Naming A's tool or client with B's key finds nothing.
    const tools = await getJson<{ tools: { tool_name: string; calls: number }[] }>(`/v1/metrics/tools?${range}&tool=alpha_tool`, b.read_key);
    expect(tools.body.tools).toEqual([]);
    const shared = await getJson<{ tools: { tool_name: string; calls: number }[] }>(`/v1/metrics/tools?${range}&tool=shared_name`, b.read_key);
    expect(shared.body.tools.map((t) => t.calls)).toEqual([7]);
    const byClient = await getJson<{ clients: unknown[] }>(`/v1/metrics/clients?${range}&client=alpha_client`, b.read_key);
    expect(byClient.body.clients).toEqual([]);
    const sessions = await getJson<{ sessions: number }>(`/v1/metrics/sessions?${range}&client=alpha_client`, b.read_key);
    expect(sessions.body.sessions).toBe(0);
  });
});
