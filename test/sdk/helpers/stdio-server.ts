// A stdio MCP server with watch(), run as a child process: node stdio-server.ts <flavour> <endpoint> <key> [debug]
// The key "-" runs the same server unwatched (the baseline the answers are compared with).
import { StdioServerTransport as StdioV1 } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StdioServerTransport as StdioV2 } from "@modelcontextprotocol/server/stdio";
import { watch } from "../../../src/sdk/index.ts";
import { buildServer, type Flavour } from "./fixtures.ts";

const [flavour, endpoint, key, debug] = process.argv.slice(2) as [Flavour, string, string, string | undefined];
const built = buildServer(flavour);
const server = (key === "-" ? built : watch(built, { key, endpoint, debug: debug === "debug" })) as {
  connect(transport: unknown): Promise<void>;
};
await server.connect(flavour.startsWith("v1") ? new StdioV1() : new StdioV2());
