// A process that records calls and then ends in a chosen way, to test the exit flush (SPEC §4).
// node exit-child.ts <endpoint> <key> <calls, or groups of calls: 51+5> <idle|wait|host-handler|exit> [send timeout ms]
// A send timeout far beyond the test's own timeout means only the 1 s exit-flush cap can end a
// process whose sends hang: were the cap broken, the test would time out, whatever the machine.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { watch } from "../../../src/sdk/index.ts";
import { setTransportOverridesForTests } from "../../../src/sdk/destination.ts";

const [endpoint, key, callsText, mode, sendTimeoutText] = process.argv.slice(2) as [string, string, string, string, string | undefined];
if (sendTimeoutText !== undefined) setTransportOverridesForTests({ sendTimeoutMs: Number(sendTimeoutText) });
const server = watch(new McpServer({ name: "exit-child", version: "1.0.0" }), { key, endpoint });
server.registerTool("ping", { description: "Answers pong" }, () => ({ content: [{ type: "text", text: "pong" }] }));
const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
await server.connect(serverTransport);
const client = new Client({ name: "exit-client", version: "1.0.0" });
await client.connect(clientTransport);
// "51+5": 51 calls, a pause that lets the first flush go (the in-memory transport runs on
// microtasks, so no timer fires inside a group), then 5 more.
for (const group of callsText.split("+")) {
  for (let i = 0; i < Number(group); i++) await client.callTool({ name: "ping", arguments: { i } });
  // Let the startup (built asynchronously after initialize) reach the buffer.
  await new Promise((resolve) => setTimeout(resolve, 20));
}
if (mode === "wait") setInterval(() => {}, 60_000); // something of the host's keeps it alive
if (mode === "host-handler") {
  setInterval(() => {}, 60_000);
  process.on("SIGTERM", () => setTimeout(() => process.exit(7), 300));
}
process.stdout.write("ready\n");
if (mode === "exit") process.exit(0); // skips beforeExit, and so the exit flush
