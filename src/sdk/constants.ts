// The numbers SPEC §4 fixes for the producer SDK, in one place so tests can check them.

/** Flush as soon as this many payloads are waiting (SPEC §4 "flush at 30 payloads"). */
export const FLUSH_AT_PAYLOADS = 30;
/** …or this long after the first waiting payload, whichever comes first (SPEC §4: 5 seconds). */
export const FLUSH_INTERVAL_MS = 5_000;
/** At most this many payloads wait in memory; the oldest is dropped beyond it (SPEC §4). */
export const MAX_BUFFERED_PAYLOADS = 1_000;
/**
 * At most 500 payloads per request, a larger flush is split (SPEC §4). The SDK's own number, not
 * the ingest's MAX_BATCH_ITEMS: the ingest accepts more (SPEC §1.1) so that other producers'
 * larger batches survive, while this SDK keeps its requests small.
 */
export const MAX_PAYLOADS_PER_REQUEST = 500;
/** A send that has not finished after 10 seconds is abandoned and its batch dropped (SPEC §4). */
export const SEND_TIMEOUT_MS = 10_000;
/** The final flush on exit is best effort and takes at most 1 second (SPEC §4). */
export const EXIT_FLUSH_TIMEOUT_MS = 1_000;
/** Agreement verdicts compare values seen within this window by default (SPEC §4: 300,000 ms). */
export const DEFAULT_AGREE_WINDOW_MS = 300_000;
/** Relative tolerance under which two numbers agree (`25.22` = `25.220` = `"25.22"`). */
export const AGREE_RELATIVE_TOLERANCE = 1e-4;
/** The ingest route below the endpoint (SPEC §1.1). */
export const INGEST_PATH = "/v1/ingest";
/** Reported as `sdk` in the startup payload (≤ 64 characters, SPEC §1.2). */
export const SDK_NAME = "mcpulse-edge-ts";
export const SDK_VERSION = "0.1.0";
export const SDK_ID = `${SDK_NAME}/${SDK_VERSION}`;
/** Client name when the client gave none (SPEC §4). */
export const UNKNOWN_CLIENT = "unknown";
/** `_meta` key of the per-request client identity (MCP revision 2026-07-28, SDK 2.x). */
export const CLIENT_INFO_META_KEY = "io.modelcontextprotocol/clientInfo";
/** `_meta` key of the per-request protocol version (MCP revision 2026-07-28). */
export const PROTOCOL_VERSION_META_KEY = "io.modelcontextprotocol/protocolVersion";
/** JSON-RPC "invalid params": a low-level handler throwing it reports `bad_args` (SPEC §4). */
export const INVALID_PARAMS_CODE = -32602;
