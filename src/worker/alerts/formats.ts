// Notification bodies per destination kind (SPEC §5): Slack, Discord, signed generic JSON. Names are
// escaped and mentions disabled, so a tool named "<!channel>" or "@everyone" pings nobody.
import { formatFigure, summaryOf, titleOf, type NotificationPayload } from "./notification.ts";
import type { DestinationKind } from "./rules.ts";
import { SIGNATURE_HEADER, TIMESTAMP_HEADER, signatureOf } from "./signing.ts";

export type OutgoingRequest = { body: string; headers: Record<string, string> };

/** Slack mrkdwn: &, < and > are the only characters with meaning to escape (Slack's formatting guide). */
export function slackEscape(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}

/** Discord markdown: backslash every character that formats. */
export function discordEscape(text: string): string {
  return text.replace(/[\\*_~`|>[\]()#@-]/g, "\\$&");
}

/** Cuts to `max` characters (Slack and Discord reject longer fields), marking the cut. */
function cut(text: string, max: number): string {
  const chars = Array.from(text);
  return chars.length <= max ? text : chars.slice(0, max - 1).join("") + "…";
}

const COLORS = { firing: 0xd93f0b, reminder: 0xd93f0b, resolved: 0x2da44e, test: 0x0969da } as const;

function figureLine(p: NotificationPayload): string | null {
  if (p.kind === "test" || p.value === null && p.threshold === null) return null;
  const threshold = p.threshold === null ? "" : ` vs threshold ${p.op ?? ""} ${formatFigure(p.metric, p.threshold)}`;
  return `${formatFigure(p.metric, p.value)}${threshold}`;
}

export function slackMessage(p: NotificationPayload): object {
  const fields = [
    { type: "mrkdwn", text: `*Tool*\n${slackEscape(cut(p.scope.tool ?? "all tools", 500))}` },
    { type: "mrkdwn", text: `*Client*\n${slackEscape(cut(p.scope.client ?? "all clients", 500))}` },
  ];
  const figure = figureLine(p);
  if (figure !== null) fields.push({ type: "mrkdwn", text: `*Figure*\n${slackEscape(figure)}` });
  fields.push({ type: "mrkdwn", text: `*Project*\n${slackEscape(cut(p.project.name, 500))}` });
  const blocks: object[] = [
    { type: "header", text: { type: "plain_text", text: cut(titleOf(p), 150), emoji: false } },
    { type: "section", text: { type: "mrkdwn", text: slackEscape(cut(summaryOf(p), 2900)) }, fields },
  ];
  if (p.url !== null) {
    blocks.push({
      type: "actions",
      elements: [{ type: "button", text: { type: "plain_text", text: p.scope.tool === null ? "Open the dashboard" : "Open the tool" }, url: p.url }],
    });
  }
  blocks.push({ type: "context", elements: [{ type: "mrkdwn", text: slackEscape(`MCPulse Edge · ${p.rule ? `rule ${p.rule.id} · ` : ""}${p.at}`) }] });
  // `text` is the fallback for notifications and clients without blocks.
  return { text: slackEscape(cut(`${titleOf(p)} — ${summaryOf(p)}`, 3000)), blocks };
}

export function discordMessage(p: NotificationPayload): object {
  const fields = [
    { name: "Tool", value: discordEscape(cut(p.scope.tool ?? "all tools", 900)), inline: true },
    { name: "Client", value: discordEscape(cut(p.scope.client ?? "all clients", 900)), inline: true },
  ];
  const figure = figureLine(p);
  if (figure !== null) fields.push({ name: "Figure", value: discordEscape(figure), inline: true });
  return {
    username: "MCPulse Edge",
    // Names come from producers: never let one mention @everyone, a role or a user.
    allowed_mentions: { parse: [] },
    embeds: [
      {
        title: cut(titleOf(p), 256),
        description: discordEscape(cut(summaryOf(p), 3900)),
        ...(p.url !== null ? { url: p.url } : {}),
        color: COLORS[p.kind],
        fields,
        footer: { text: cut(`${p.project.name}${p.rule ? ` · rule ${p.rule.id}` : ""}`, 2000) },
        timestamp: p.at,
      },
    ],
  };
}

/** The request for a destination: its body and headers (the webhook's signed at `nowMs`). */
export async function renderRequest(
  kind: DestinationKind,
  payload: NotificationPayload,
  secret: string | null,
  nowMs: number,
): Promise<OutgoingRequest> {
  const headers: Record<string, string> = { "content-type": "application/json", "user-agent": "mcpulse-edge-alerts/1" };
  if (kind === "slack") return { body: JSON.stringify(slackMessage(payload)), headers };
  if (kind === "discord") return { body: JSON.stringify(discordMessage(payload)), headers };
  const body = JSON.stringify(payload);
  const timestamp = Math.floor(nowMs / 1000);
  headers[TIMESTAMP_HEADER] = String(timestamp);
  headers[SIGNATURE_HEADER] = await signatureOf(secret ?? "", timestamp, body);
  return { body, headers };
}
