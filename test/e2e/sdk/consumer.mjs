// What a server author writes after `npm install mcpulse-edge`: node consumer.mjs <endpoint>
import { watch, FLUSH_AT_PAYLOADS } from "mcpulse-edge/sdk";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";

const server = watch(new McpServer({ name: "packed", version: "1.0.0" }), { key: "mp_live_packed", endpoint: process.argv[2] });
server.registerTool("hello", { description: "Says hello" }, () => ({ content: [{ type: "text", text: "hello" }] }));
const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
await server.connect(serverSide);
const client = new Client({ name: "packed-client", version: "1.0.0" });
await client.connect(clientSide);
await client.callTool({ name: "hello", arguments: { who: "world" } });
await client.callTool({ name: "missing", arguments: {} });
console.log(JSON.stringify({ node: process.version, flushAt: FLUSH_AT_PAYLOADS }));
// Nothing else to do: the exit flush delivers the payloads as the process ends.
