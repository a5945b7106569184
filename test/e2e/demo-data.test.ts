// The dashboard test's demo data must fit the page's default range (the last 7 UTC days, today
// included) at any hour it runs at: no test may depend on the time of day.
import { expect, test } from "vitest";
import { demoWorkload } from "./dashboard/demo-data.ts";

const DAY_MS = 86_400_000;

test("every demo payload falls inside the default range, at every minute of a day", () => {
  const day = Date.UTC(2026, 11, 1);
  for (let minute = 0; minute < 24 * 60; minute += 7) {
    const nowMs = day + minute * 60_000;
    const rangeStart = day - 6 * DAY_MS;
    const { payloads } = demoWorkload(nowMs);
    for (const p of payloads) {
      const at = Date.parse(String(p.type === "call" ? p.started_at : p.type === "agreement" ? p.checked_at : new Date(nowMs).toISOString()));
      expect(at, `${p.type} at ${new Date(nowMs).toISOString()}`).toBeGreaterThanOrEqual(rangeStart);
      expect(at).toBeLessThanOrEqual(nowMs);
    }
  }
});
