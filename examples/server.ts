// A small stdio MCP server instrumented with MCPulse. In your own server the import is
//   import { watch } from "mcpulse-edge/sdk";
// The key and endpoint come from the environment here because this server is a script; the
// SDK itself reads no environment variables.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";
import { watch } from "../src/sdk/index.ts";

const server = watch(new McpServer({ name: "orders-example", version: "1.0.0" }), {
  key: process.env.MCPULSE_KEY,
  endpoint: process.env.MCPULSE_ENDPOINT ?? "http://127.0.0.1:8787",
  debug: process.env.MCPULSE_DEBUG === "1", // every payload sent, on stderr (stdout is the transport)
  policy: { refund_order: { requires_authorization: true } },
  agree: { order_total: { get_order: "total", search_orders: "orders.0.total" } },
});

const ORDERS: Record<string, { id: string; customer: string; total: number; status: string }> = {
  "A-1001": { id: "A-1001", customer: "Acme GmbH", total: 1200.5, status: "shipped" },
  "A-1002": { id: "A-1002", customer: "Globex", total: 87.25, status: "open" },
};

server.registerTool(
  "search_orders",
  {
    description: "Search orders by customer name. Returns matching orders with their totals.",
    inputSchema: { customer: z.string(), limit: z.number().int().positive().optional() },
  },
  ({ customer, limit }) => {
    const orders = Object.values(ORDERS)
      .filter((order) => order.customer.toLowerCase().includes(customer.toLowerCase()))
      .slice(0, limit ?? 10);
    return { content: [{ type: "text", text: JSON.stringify({ orders }) }] };
  },
);

server.registerTool(
  "get_order",
  { description: "Get one order by its id, e.g. A-1001.", inputSchema: { id: z.string() } },
  ({ id }) => {
    const order = ORDERS[id];
    // An unknown id answers an empty object: a success the model cannot use (is_empty).
    return { content: [{ type: "text", text: JSON.stringify(order ?? {}) }] };
  },
);

server.registerTool(
  "refund_order",
  { description: "Refund an order. Only open orders can be refunded.", inputSchema: { id: z.string() } },
  ({ id }) => {
    const order = ORDERS[id];
    if (!order || order.status !== "open") {
      return { content: [{ type: "text", text: `Order ${id} cannot be refunded.` }], isError: true };
    }
    return { content: [{ type: "text", text: `Refunded ${id}.` }] };
  },
);

server.registerTool("export_report", { description: "Export the monthly report (not implemented yet)." }, () => {
  throw new Error("report backend unavailable");
});

server.registerTool("legacy_lookup", { description: "Old lookup nobody calls any more." }, () => ({
  content: [{ type: "text", text: "[]" }],
}));

await server.connect(new StdioServerTransport());
