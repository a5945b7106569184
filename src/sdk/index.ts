// mcpulse-edge/sdk — the whole public surface of the producer SDK (SPEC §4). Every file keeps §4's
// rules, cited by number: 1 never throw into the host, 2 never block, 3 never send customer data.
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
