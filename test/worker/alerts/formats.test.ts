// Destination formats and signatures (SPEC §5): the webhook signature is HMAC-SHA256 over
// `timestamp.body` (checked against node:crypto), Slack and Discord messages escape producer names.
import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { discordMessage, renderRequest, slackMessage } from "../../../src/worker/alerts/formats.ts";
import { dashboardUrl, type NotificationPayload } from "../../../src/worker/alerts/notification.ts";
import { nextAttemptAtMs } from "../../../src/worker/alerts/delivery.ts";
import { checkTarget, urlHint } from "../../../src/worker/alerts/targets.ts";

const payload: NotificationPayload = {
  kind: "firing",
  project: { id: "prj_x", name: "shop" },
  rule: { id: "rul_x", name: null },
  scope: { tool: "<!channel> @everyone *bold*", client: "claude-ai" },
  state: "firing",
  metric: "error_rate",
  op: ">",
  value: 0.4286,
  threshold: 0.1,
  window: { hours: 24, from: "2026-12-01T00:00:00.000Z", to: "2026-12-02T00:00:00.000Z" },
  at: "2026-12-01T12:05:00.000Z",
  url: "https://mcpulse.example.com/tool?name=search",
};

describe("formats", () => {
  it("signs the webhook body: sha256=hex(HMAC-SHA256(secret, timestamp + '.' + body))", async () => {
    const req = await renderRequest("webhook", payload, "whsec_test", 1_800_000_000_123);
    expect(req.headers["X-MCPulse-Timestamp"]).toBe("1800000000");
    const expected = "sha256=" + createHmac("sha256", "whsec_test").update(`1800000000.${req.body}`).digest("hex");
    expect(req.headers["X-MCPulse-Signature"]).toBe(expected);
    expect(JSON.parse(req.body)).toEqual(payload);
  });

  it("Slack: blocks with what, tool and client, figure vs threshold, a link; names escaped so nothing pings", () => {
    const m = slackMessage(payload) as { text: string; blocks: { type: string; fields?: { text: string }[]; elements?: { url?: string }[] }[] };
    const text = JSON.stringify(m);
    expect(text).not.toContain("<!channel>");
    expect(text).toContain("&lt;!channel&gt;");
    const section = m.blocks.find((b) => b.type === "section")!;
    expect(section.fields!.map((f) => f.text)).toEqual([
      "*Tool*\n&lt;!channel&gt; @everyone *bold*",
      "*Client*\nclaude-ai",
      "*Figure*\n42.9% vs threshold &gt; 10.0%",
      "*Project*\nshop",
    ]);
    expect(m.blocks.find((b) => b.type === "actions")!.elements![0]!.url).toBe(payload.url);
  });

  it("Discord: an embed with mentions disabled and markdown escaped", () => {
    const m = discordMessage(payload) as { allowed_mentions: { parse: string[] }; embeds: { url: string; fields: { name: string; value: string }[] }[] };
    expect(m.allowed_mentions).toEqual({ parse: [] });
    expect(m.embeds[0]!.url).toBe(payload.url);
    expect(m.embeds[0]!.fields[0]!.value).toBe("<!channel\\> \\@everyone \\*bold\\*");
  });
});

describe("targets and retries", () => {
  it("url_hint keeps the host and the last 4 characters of a long path only", () => {
    expect(urlHint(new URL("https://hooks.slack.com/services/T1/B2/abcdefghijkl"))).toBe("https://hooks.slack.com/…ijkl");
    expect(urlHint(new URL("https://example.com/short"))).toBe("https://example.com/…");
  });

  it("checkTarget refuses http outside local runs and credentials in the URL", () => {
    expect(checkTarget("http://127.0.0.1/h", false).ok).toBe(false);
    expect(checkTarget("http://127.0.0.1/h", true).ok).toBe(true);
    expect(checkTarget("https://a:b@example.com/", true).ok).toBe(false);
  });

  it("backs off 1 min, 5 min, 30 min, 2 h, then every 6 h, and gives up after 24 h", () => {
    const created = 0;
    let at = created;
    const schedule: number[] = [];
    for (let attempt = 1; attempt < 20; attempt++) {
      const next = nextAttemptAtMs(created, attempt, at);
      if (next === null) break;
      schedule.push((next - at) / 60_000);
      at = next;
    }
    expect(schedule).toEqual([1, 5, 30, 120, 360, 360, 360]);
    expect(at).toBeLessThanOrEqual(24 * 3_600_000);
  });
});

describe("links to the dashboard", () => {
  it("name the tool's page /tool?name=… (any name, '.' and '..' included) with the client, or the overview", () => {
    expect(dashboardUrl("https://m.example", { tool: "..", client: "Claude Desktop+beta" })).toBe("https://m.example/tool?name=..&client=Claude+Desktop%2Bbeta");
    expect(dashboardUrl("https://m.example/", { tool: "update order/€ 🔍", client: null })).toBe(`https://m.example/tool?name=${encodeURIComponent("update order/€ 🔍").replace(/%20/g, "+")}`);
    expect(dashboardUrl("https://m.example", { tool: null, client: null })).toBe("https://m.example/");
    expect(dashboardUrl(undefined, { tool: "x", client: null })).toBeNull();
  });
});
