// Type-checks the published declarations the way a TypeScript server author would use them.
import { watch, type WatchOptions } from "mcpulse-edge/sdk";

const options: WatchOptions = { key: "mp_live_x", endpoint: "http://127.0.0.1:8787", policy: { pay: { requires_authorization: true } } };
const server = { name: "not really a server" };
const same: { name: string } = watch(server, options);
export { same };
