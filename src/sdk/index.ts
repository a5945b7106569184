// mcpulse-edge/sdk — the whole public surface of the producer SDK (SPEC §4).
// Every file of the SDK keeps SPEC §4's three rules, cited by number where a line exists for them:
// rule 1, never throw into the host (every entry point swallows its own failures); rule 2, never
// block (recording is synchronous and cheap, nothing on the tool-call path waits on the network);
// rule 3, never send customer data (arguments, results, descriptions and schemas stay in the process).
export { watch } from "./watch.ts";
export type { WatchOptions, ToolPolicy, SessionKeyRequest } from "./options.ts";
export {
  DEFAULT_AGREE_WINDOW_MS,
  EXIT_FLUSH_TIMEOUT_MS,
  FLUSH_AT_PAYLOADS,
  FLUSH_INTERVAL_MS,
  MAX_BUFFERED_PAYLOADS,
  MAX_PAYLOADS_PER_REQUEST,
  SDK_ID,
  SEND_TIMEOUT_MS,
} from "./constants.ts";
