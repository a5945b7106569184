// Every filter combination (none, client, tool, both) on every route that takes them, against sums
// computed here from the seeded rows.
import { describe, expect, it } from "vitest";
import { createProject } from "../helpers/projects.ts";
import { HOUR, dayMs, getJson, seedHour, seedPair } from "./seed.ts";

const TOOLS = ["alpha", "beta", "gamma"];
const CLIENTS = ["c1", "c2", "c3"];
const DAYS = ["2026-10-10", "2026-10-11"];

/** Distinct call counts per (tool, client, day) so a wrong filter cannot give the right sum. */
function callsOf(t: number, c: number, d: number): number {
  return 1 + t * 100 + c * 10 + d * 1000;
}

type Filter = { client?: string; tool?: string };
const COMBINATIONS: Filter[] = [{}, { client: "c2" }, { tool: "beta" }, { client: "c3", tool: "gamma" }, { client: "nobody" }, { client: "c1", tool: "nothing" }];

function expected(f: Filter, group: (t: number, c: number, d: number) => string): Map<string, number> {
  const sums = new Map<string, number>();
  TOOLS.forEach((tool, t) =>
    CLIENTS.forEach((client, c) =>
      DAYS.forEach((_, d) => {
        if ((f.tool && f.tool !== tool) || (f.client && f.client !== client)) return;
        const key = group(t, c, d);
        sums.set(key, (sums.get(key) ?? 0) + callsOf(t, c, d));
      }),
    ),
  );
  return sums;
}

function query(f: Filter): string {
  return `from=${DAYS[0]}&to=${DAYS[1]}${f.client ? `&client=${f.client}` : ""}${f.tool ? `&tool=${f.tool}` : ""}`;
}

describe("filter combinations", () => {
  it("tools, clients, timeseries (day and hour) and pairs sum exactly the matching rows", async () => {
    const p = await createProject();
    for (const [t, tool] of TOOLS.entries()) {
      for (const [c, client] of CLIENTS.entries()) {
        for (const [d, day] of DAYS.entries()) {
          const calls = callsOf(t, c, d);
          await seedHour({ projectId: p.project_id, hourMs: dayMs(day) + (t + 1) * HOUR, tool, client, counters: { calls, ok: calls } });
          await seedPair(p.project_id, day, client, tool, TOOLS[(t + 1) % TOOLS.length] as string, calls);
        }
      }
    }
    for (const f of COMBINATIONS) {
      const q = query(f);
      const tools = await getJson<{ tools: { tool_name: string; calls: number }[] }>(`/v1/metrics/tools?${q}`, p.read_key);
      expect(new Map(tools.body.tools.map((r) => [r.tool_name, r.calls])), q).toEqual(expected(f, (t) => TOOLS[t] as string));

      const clients = await getJson<{ clients: { client_name: string; calls: number }[] }>(`/v1/metrics/clients?${q}`, p.read_key);
      expect(new Map(clients.body.clients.map((r) => [r.client_name, r.calls])), q).toEqual(expected(f, (_, c) => CLIENTS[c] as string));

      const days = await getJson<{ buckets: { start: string; calls: number }[] }>(`/v1/metrics/timeseries?${q}`, p.read_key);
      const byDay = expected(f, (_, __, d) => `${DAYS[d]}T00:00:00.000Z`);
      for (const b of days.body.buckets) expect(b.calls, `${q} ${b.start}`).toBe(byDay.get(b.start) ?? 0);

      const hours = await getJson<{ buckets: { start: string; calls: number }[] }>(`/v1/metrics/timeseries?${q}&grain=hour`, p.read_key);
      const byHour = expected(f, (t, _, d) => new Date(dayMs(DAYS[d] as string) + (t + 1) * HOUR).toISOString());
      for (const b of hours.body.buckets) expect(b.calls, `${q} ${b.start}`).toBe(byHour.get(b.start) ?? 0);

      const pairs = await getJson<{ pairs: { from_tool: string; to_tool: string; count: number }[] }>(`/v1/metrics/pairs?${q}`, p.read_key);
      // The tool filter keeps pairs with the tool on either side.
      const pairSums = new Map<string, number>();
      TOOLS.forEach((tool, t) =>
        CLIENTS.forEach((client, c) =>
          DAYS.forEach((_, d) => {
            const to = TOOLS[(t + 1) % TOOLS.length] as string;
            if (f.client && f.client !== client) return;
            if (f.tool && f.tool !== tool && f.tool !== to) return;
            const key = `${tool}>${to}`;
            pairSums.set(key, (pairSums.get(key) ?? 0) + callsOf(t, c, d));
          }),
        ),
      );
      expect(new Map(pairs.body.pairs.map((x) => [`${x.from_tool}>${x.to_tool}`, x.count])), q).toEqual(pairSums);
    }
  });
});
