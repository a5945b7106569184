// The `startup` payload (SPEC §1.2): the server's tool list, sent when a client initializes.
import { z } from "zod";
import { agreementFieldSchema } from "./agreement.ts";
import {
  boundedText,
  byteCountSchema,
  clientNameSchema,
  hashSchema,
  sessionIdSchema,
  toolNameSchema,
} from "./fields.ts";
import {
  MAX_AGREE_DECLARED_FIELDS,
  MAX_AGREE_DECLARED_TOOLS,
  MAX_MCP_SDK_VERSION_CHARS,
  MAX_PROTOCOL_VERSION_CHARS,
  MAX_SDK_CHARS,
  MAX_STARTUP_TOOLS,
} from "./limits.ts";

/** How the client is connected (SPEC §4: stdio, streamable HTTP → `http`, SSE, else `unknown`). */
export const TRANSPORTS = ["stdio", "http", "sse", "unknown"] as const;
export const transportSchema = z.enum(TRANSPORTS);
/**
 * `transport` as it arrives: any string, one outside TRANSPORTS (the PHP SDK's `streamable-http`,
 * `HTTP`, a future transport) stored as `unknown`. It only describes the connection, and SPEC §1.2
 * says a descriptive field never costs the startup — its tool list is what every metric needs.
 * A value that is not a string at all is still a wrong type and drops the startup (SPEC §1.2).
 */
export const wireTransportSchema = z
  .string()
  .transform((transport): Transport => transportSchema.safeParse(transport).data ?? "unknown");

/**
 * An optional field: absent and `null` mean the same thing and are stored as `null`. (A producer
 * that writes its "none" as null, as most JSON encoders do, must not lose the startup for it.)
 */
function optional<T extends z.ZodType>(schema: T) {
  return schema.nullish().transform((value) => value ?? null);
}

/** A tool's declared access policy; `null` or both flags false means no policy (SPEC §2.4). */
export const toolPolicySchema = z.object({
  requires_authorization: z.boolean(),
  requires_verified_identity: z.boolean(),
});

export const startupToolSchema = z.object({
  name: toolNameSchema,
  schema_bytes: byteCountSchema,
  schema_hash: optional(hashSchema),
  description_hash: optional(hashSchema),
  description_norm: optional(hashSchema),
  policy: optional(toolPolicySchema),
});

export const agreeDeclaredSchema = z.object({
  field: agreementFieldSchema,
  tools: z.array(toolNameSchema).max(MAX_AGREE_DECLARED_TOOLS),
});

/**
 * A startup as stored: absent optionals `null`, missing `tools`/`agree_declared` `[]` (the Go SDK
 * omits empty lists), unknown keys stripped. One invalid tool entry drops the startup; a name listed
 * twice does not (SPEC §1.2; the rollup keeps the last, docs/metrics.md).
 */
export const startupPayloadSchema = z.object({
  v: z.literal(1),
  type: z.literal("startup"),
  session_id: sessionIdSchema,
  client_name: clientNameSchema,
  tools: z
    .array(startupToolSchema)
    .max(MAX_STARTUP_TOOLS)
    .default(() => []),
  sdk: optional(boundedText(MAX_SDK_CHARS)),
  mcp_sdk_version: optional(boundedText(MAX_MCP_SDK_VERSION_CHARS)),
  transport: optional(wireTransportSchema),
  protocol_version: optional(boundedText(MAX_PROTOCOL_VERSION_CHARS)),
  agree_declared: z
    .array(agreeDeclaredSchema)
    .max(MAX_AGREE_DECLARED_FIELDS)
    .nullish()
    .transform((declared) => declared ?? []),
});

/** A parsed startup, as parseBatch returns it. */
export type StartupPayload = z.output<typeof startupPayloadSchema>;
/** A startup as a producer sends it. */
export type StartupPayloadInput = z.input<typeof startupPayloadSchema>;
export type StartupTool = StartupPayload["tools"][number];
export type ToolPolicy = z.output<typeof toolPolicySchema>;
export type Transport = z.output<typeof transportSchema>;
