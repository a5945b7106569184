// `npm run example`: drives examples/server.ts (a stdio MCP server with watch()) with a real MCP
// client against the local worker (`npm run dev`), runs the rollup, prints what
// /v1/metrics/tools now says, asks the worker's own MCP server (/mcp, docs/mcp.md) the same question
// as an agent would, and prints the dashboard URL.
//   MCPULSE_URL        worker URL (default: the one a running `npm run dev` recorded, else
//                      http://127.0.0.1:8787)
//   MCPULSE_KEY / MCPULSE_READ_KEY   reuse an existing project's keys instead of creating one
//   ADMIN_TOKEN        else read from .dev.vars (written by `npm run dev`)
// `npm run example -- --remote`: the same against the worker `npm run deploy` deployed last (its URL
// and the admin token it set, .deploy.vars); there the cron folds the calls in within 5 minutes.
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

// @ts-expect-error -- a plain .mjs module of the scripts, without type declarations
const { readDevUrl } = (await import("../scripts/dev-support.mjs")) as { readDevUrl: () => string | null };
// @ts-expect-error -- a plain .mjs module of the scripts, without type declarations
const { runLocalRollup } = (await import("../scripts/rollup-local.mjs")) as {
  runLocalRollup: (o: { url: string; adminToken: string; timeoutMs?: number }) => Promise<{ ok: boolean; message: string }>;
};

// @ts-expect-error -- a plain .mjs module of the scripts, without type declarations
const { DEPLOY_URL_FILE, DEPLOY_VARS } = (await import("../scripts/deploy-plan.mjs")) as { DEPLOY_URL_FILE: string; DEPLOY_VARS: string };

const root = fileURLToPath(new URL("..", import.meta.url));
const remote = process.argv.includes("--remote");
const fileText = (name: string) => (existsSync(`${root}${name}`) ? readFileSync(`${root}${name}`, "utf8") : "");
if (remote && !fileText(DEPLOY_URL_FILE).trim()) {
  console.error("No deployed worker recorded here: run `npm run deploy` first (or name a worker with MCPULSE_URL).");
  process.exit(1);
}
const recorded = remote ? fileText(DEPLOY_URL_FILE).trim() : readDevUrl();
const url = (process.env.MCPULSE_URL || recorded || "http://127.0.0.1:8787").replace(/\/+$/, "");
const urlSource = process.env.MCPULSE_URL ? "MCPULSE_URL" : remote ? "the URL `npm run deploy` recorded" : recorded ? "the URL `npm run dev` recorded" : "the default";

async function reachable(): Promise<boolean> {
  try {
    await fetch(`${url}/v1/metrics/tools`, { signal: AbortSignal.timeout(3_000) });
    return true;
  } catch {
    return false;
  }
}

function adminToken(): string | undefined {
  return process.env.ADMIN_TOKEN ?? /^ADMIN_TOKEN\s*=\s*"?([^"\n]*)"?\s*$/m.exec(fileText(remote ? DEPLOY_VARS : ".dev.vars"))?.[1];
}

async function keys(): Promise<{ ingest: string; read: string }> {
  if (process.env.MCPULSE_KEY && process.env.MCPULSE_READ_KEY) return { ingest: process.env.MCPULSE_KEY, read: process.env.MCPULSE_READ_KEY };
  const token = adminToken();
  if (!token) {
    throw new Error(remote
      ? `No ADMIN_TOKEN: ${DEPLOY_VARS} holds the one \`npm run deploy\` set; for one set another way, set ADMIN_TOKEN.`
      : "No ADMIN_TOKEN: run `npm run dev` once (it writes .dev.vars), or set ADMIN_TOKEN.");
  }
  const response = await fetch(`${url}/v1/admin/projects`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ name: `example ${new Date().toISOString().slice(0, 16)}` }),
  });
  if (response.status !== 201) throw new Error(`creating a project answered ${response.status}: ${await response.text()}`);
  const project = (await response.json()) as { ingest_key: string; read_key: string; project_id: string };
  console.log(`Created project ${project.project_id}.`);
  return { ingest: project.ingest_key, read: project.read_key };
}

if (!(await reachable())) {
  console.error(
    `The worker is not answering at ${url} (${urlSource}).\n` +
      "Start it in another terminal with `npm run dev` (this example then finds it on whatever port it serves),\n" +
      "or, for a worker running elsewhere, name it: MCPULSE_URL=http://127.0.0.1:8788 npm run example",
  );
  process.exit(1);
}
const { ingest, read } = await keys();

// The MCP server runs as a child process over stdio, exactly as a desktop client would run it.
const transport = new StdioClientTransport({
  command: process.execPath,
  args: ["--experimental-strip-types", "--no-warnings", fileURLToPath(new URL("./server.ts", import.meta.url))],
  env: { ...(process.env as Record<string, string>), MCPULSE_KEY: ingest, MCPULSE_ENDPOINT: url },
  stderr: "inherit",
});
const client = new Client({ name: "example-client", version: "1.0.0" });
await client.connect(transport);
const call = async (name: string, args: Record<string, unknown>) => {
  try {
    const result = await client.callTool({ name, arguments: args });
    return result.isError ? "isError" : "ok";
  } catch (error) {
    return `error: ${(error as Error).message}`;
  }
};
// A session like a model's: a wrong first attempt and its retry, an empty answer, a tool error,
// a crash, pagination (the same arguments again), and a pair of tools used one after the other.
const script: [string, Record<string, unknown>][] = [
  ["search_orders", { customer: "acme", limit: "5" }], // bad_args: limit must be a number
  ["search_orders", { customer: "acme", limit: 5 }], // its retry, different arguments
  ["get_order", { id: "A-1001" }],
  ["get_order", { id: "A-9999" }], // empty: {}
  ["refund_order", { id: "A-1001" }], // tool_error: shipped
  ["refund_order", { id: "A-1002" }],
  ["export_report", {}], // crashed
  ["search_orders", { customer: "globex" }],
  ["search_orders", { customer: "globex" }], // same arguments: a repeat, not a retry
];
for (const [name, args] of script) console.log(`  ${name}(${JSON.stringify(args)}) → ${await call(name, args)}`);
await client.close(); // the server's stdin closes; its exit flush sends the buffered payloads

// Fold them into the metrics now instead of waiting for the 5-minute cron: what `npm run rollup` does
// (it triggers the cron on `npm run dev` and waits until every database's rollup job is done).
await new Promise((resolve) => setTimeout(resolve, 500));
const token = adminToken();
if (remote) {
  // A deployed worker has no route to trigger its cron: it runs every 5 minutes on its own.
  console.log("\nThe deployed worker's cron folds these calls into the metrics within 5 minutes: open the dashboard then.");
} else {
  const rollup = token ? await runLocalRollup({ url, adminToken: token, timeoutMs: 30_000 }) : { ok: false, message: "no ADMIN_TOKEN to read the rollup's progress" };
  console.log(rollup.ok ? `\n${rollup.message}` : `\n(The rollup did not run now: ${rollup.message} The cron folds the calls in within 5 minutes.)`);
}

type ToolsAnswer = {
  tools: { tool_name: string; calls: number; ok: number; empty: number; bad_args: number; tool_error: number; crashed: number; first_call_rate: number | null; dead: boolean }[];
};
const metrics = (await (await fetch(`${url}/v1/metrics/tools`, { headers: { authorization: `Bearer ${read}` } })).json()) as ToolsAnswer;
console.log("\n/v1/metrics/tools:");
console.log("  tool            calls  ok  empty  bad_args  tool_error  crashed  first-call  dead");
for (const tool of metrics.tools ?? []) {
  console.log(
    `  ${tool.tool_name.padEnd(15)} ${String(tool.calls).padStart(5)} ${String(tool.ok).padStart(3)} ${String(tool.empty).padStart(6)} ${String(tool.bad_args).padStart(9)} ${String(tool.tool_error).padStart(11)} ${String(tool.crashed).padStart(8)}  ${String(tool.first_call_rate ?? "—").padStart(10)}  ${tool.dead}`,
  );
}
// The same figures through /mcp, as an agent in Claude Code, Cursor or VS Code gets them (docs/mcp.md).
const agent = new Client({ name: "example-agent", version: "1.0.0" });
await agent.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${read}` } } }));
const { tools: mcpTools } = await agent.listTools();
console.log(`\n/mcp offers ${mcpTools.length} tools: ${mcpTools.map((t) => t.name).join(", ")}`);
const health = (await agent.callTool({ name: "list_tools_health", arguments: { limit: 10 } })) as {
  structuredContent?: { tools: { tool_name: string; calls: number; first_call_rate: number | null }[] };
};
console.log("list_tools_health (worst first):");
for (const tool of health.structuredContent?.tools ?? []) {
  console.log(`  ${tool.tool_name.padEnd(15)} first-call success ${String(tool.first_call_rate ?? "—").padStart(6)} over ${tool.calls} calls`);
}
await agent.close();

console.log(`\nDashboard: ${url}/?key=${read}`);
console.log(`MCP server: claude mcp add --transport http mcpulse ${url}/mcp --header "Authorization: Bearer ${read}"`);
console.log(`Your ingest key: ${ingest}  (watch(server, { key, endpoint: "${url}" }))`);
