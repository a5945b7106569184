// Every cap of the wire contract (SPEC §1.1–1.2), in one module without dependencies: the Zod
// schemas enforce them and the SDK cuts what it sends to them without loading Zod.

/**
 * The ingest accepts at most 1,000 payloads per request; more → 413 (SPEC §1.1). The real MCPulse
 * SDKs send everything pending, up to their 1,000-payload buffer, and drop a batch on any non-2xx.
 * Our SDK keeps its own, smaller number per request (SPEC §4); this one is the ingest's.
 */
export const MAX_BATCH_ITEMS = 1_000;
/** At most 1 MiB of body, counted on the bytes actually read; more → 413 (SPEC §1.1). The worker enforces it. */
export const MAX_BODY_BYTES = 1_048_576;

/** `session_id` ≤ 128 characters (SPEC §1.2). */
export const MAX_SESSION_ID_CHARS = 128;
/** `client_name` ≤ 128 characters (SPEC §1.2; the SDK cuts longer names to 128). */
export const MAX_CLIENT_NAME_CHARS = 128;
/** Tool names — `tool_name`, `tools[].name`, `tool_a`/`tool_b`, declared tools — ≤ 200 characters. */
export const MAX_TOOL_NAME_CHARS = 200;
/** Integers on the wire are whole numbers ≥ 0; byte counts ≤ 2,147,483,647 (SPEC §1.2). */
export const MAX_BYTE_COUNT = 2_147_483_647;
/** `duration_ms` ≤ 86,400,000 — one day (SPEC §1.2). */
export const MAX_DURATION_MS = 86_400_000;

/** A startup lists at most 500 tools (SPEC §1.2). */
export const MAX_STARTUP_TOOLS = 500;
/**
 * `agree_declared` holds at most 64 fields, each naming at most 64 tools; more drops the startup
 * (SPEC §1.2). The rollup expands a startup into one row per (field, tool), so these caps keep that
 * cost bounded by the body size: at most 4,096 rows per startup.
 */
export const MAX_AGREE_DECLARED_FIELDS = 64;
/** Tools one `agree_declared` field may name (SPEC §1.2). */
export const MAX_AGREE_DECLARED_TOOLS = 64;
/** `sdk` ≤ 64 characters (SPEC §1.2). */
export const MAX_SDK_CHARS = 64;
/** `mcp_sdk_version` ≤ 64 characters (SPEC §1.2). */
export const MAX_MCP_SDK_VERSION_CHARS = 64;
/** `protocol_version` ≤ 64 characters (SPEC §1.2). */
export const MAX_PROTOCOL_VERSION_CHARS = 64;
/** A call's `client_version` ≤ 64 characters (SPEC §1.2; descriptive: a longer one is stored as not said). */
export const MAX_CLIENT_VERSION_CHARS = 64;
/** A call's `server_version` ≤ 64 characters (SPEC §1.2; descriptive: a longer one is stored as not said). */
export const MAX_SERVER_VERSION_CHARS = 64;

/** Agreement `field` ≤ 128 characters (SPEC §1.2). */
export const MAX_AGREEMENT_FIELD_CHARS = 128;
/**
 * `window_ms` has no cap of its own in SPEC §1.2 ("Integers are whole numbers ≥ 0"; only byte counts
 * and `duration_ms` are capped, and only "a wrong type, or over its cap" drops an item), so any whole
 * number JSON can carry exactly is kept: a producer configured with a window over a day must not
 * lose its verdicts.
 */
export const MAX_AGREEMENT_WINDOW_MS = Number.MAX_SAFE_INTEGER;
