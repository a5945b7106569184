// `npm run test:mcp-latest` (scripts/test-mcp-latest.mjs): the SDK's facts and contract tests with
// @modelcontextprotocol/sdk, /server and /client resolved from MCP_LATEST_DIR, a temporary folder
// holding the newest published 1.x and 2.x (1.17, the oldest supported, stays the installed one).
import { join } from "node:path";
import { defineConfig } from "vitest/config";

const dir = process.env.MCP_LATEST_DIR;
if (!dir) throw new Error("MCP_LATEST_DIR is not set: run npm run test:mcp-latest");
const MCP_PACKAGE = /^@modelcontextprotocol\/(sdk|server|client)(\/|$)/;

export default defineConfig({
  plugins: [
    {
      name: "mcp-sdk-from-latest-dir",
      enforce: "pre",
      async resolveId(source, _importer, options) {
        if (!MCP_PACKAGE.test(source)) return null;
        // Resolved as if imported from inside the folder: its node_modules, its export conditions.
        const resolved = await this.resolve(source, join(dir, "index.js"), { ...options, skipSelf: true });
        if (!resolved || !resolved.id.startsWith(dir)) throw new Error(`${source} did not resolve inside ${dir}`);
        return resolved;
      },
    },
  ],
  test: {
    name: "mcp-latest",
    environment: "node",
    include: ["test/sdk/mcp-sdk-facts.test.ts", "test/sdk/internals.test.ts", "test/sdk/conformance.test.ts"],
    testTimeout: 60_000,
  },
});
