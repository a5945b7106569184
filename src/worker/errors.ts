// The API's one error model (docs/errors.md): a code per error, one `apiError(code, message)` path,
// one body written by app.onError. `error` stays a string (SPEC §1.1); messages never quote input.
import { zValidator } from "@hono/zod-validator";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { z } from "zod";

/** Every error code, with the one HTTP status it is answered with. Append-only: producers branch on these. */
export const ERROR_CODES = {
  BAD_REQUEST: 400,
  /** No key, an unknown, revoked or wrong-kind key, or no/a wrong ADMIN_TOKEN (SPEC §3). */
  UNAUTHORIZED: 401,
  /** A cross-site request the origin checks refuse (SPEC §3). */
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  /** A limit of stored things (rules, destinations), a destination still used by a rule (SPEC §5), or a recompute already under way. */
  CONFLICT: 409,
  /** A body or a batch over its limit (SPEC §1.1). */
  PAYLOAD_TOO_LARGE: 413,
  /** A body that is not `application/json`, or an encoding other than gzip or identity (SPEC §1.1). */
  UNSUPPORTED_MEDIA_TYPE: 415,
  /** A key over its payload budget (SPEC §1.1), or too many failed sign-ins (throttle/); `Retry-After` says when to try again. */
  TOO_MANY_REQUESTS: 429,
  INTERNAL_SERVER_ERROR: 500,
  /** The worker cannot take the request durably now; `Retry-After` says when to try again (SPEC §1.1). */
  SERVICE_UNAVAILABLE: 503,
  /** `grain=hour` over days whose hours are folded into their days (older than 90 days, SPEC §7): ask `grain=day`. */
  HOURS_NOT_KEPT: 400,
  /** Explore cannot reach Analytics Engine, or no AE SQL interface is configured (SPEC §8); `Retry-After` when it may pass. */
  ANALYTICS_UNAVAILABLE: 503,
} as const satisfies Record<string, ContentfulStatusCode>;

export type ErrorCode = keyof typeof ERROR_CODES;
export const ERROR_CODE_NAMES = Object.keys(ERROR_CODES) as ErrorCode[];

/** SPEC §3: so a producer can tell "slow down" from "this credential is failing". */
export const RATE_LIMITS = ["payload_budget", "network", "key_prefix"] as const;
export type RateLimit = (typeof RATE_LIMITS)[number];

export const ErrorBody = z.object({
  error: z.string().describe("what went wrong, in our words (never the input)"),
  code: z.enum(ERROR_CODE_NAMES).describe("what a program branches on (docs/errors.md)"),
  limit: z.enum(RATE_LIMITS).optional().describe("on a 429: the limit it answers for"),
  request_id: z.string().optional().describe("the answer's X-Request-Id, the id its log lines carry"),
});
export type ErrorBody = z.infer<typeof ErrorBody>;

export const REQUEST_ID_HEADER = "X-Request-Id";

export class ApiError extends HTTPException {
  readonly code: ErrorCode;
  readonly limit: RateLimit | undefined;
  constructor(code: ErrorCode, message: string, headers?: Record<string, string>, limit?: RateLimit) {
    const status = ERROR_CODES[code];
    super(status, { message, ...(headers ? { res: new Response(null, { status, headers }) } : {}) });
    this.code = code;
    this.limit = limit;
  }
}

/** The one way a route, a middleware or a service refuses a request: `throw apiError(code, message)`. */
export function apiError(code: ErrorCode, message: string, headers?: Record<string, string>): ApiError {
  return new ApiError(code, message, headers);
}

export function rateLimited(limit: RateLimit, message: string, retryAfterSeconds: number): ApiError {
  return new ApiError("TOO_MANY_REQUESTS", message, { "Retry-After": String(retryAfterSeconds) }, limit);
}

/** A later code of the same status, like HOURS_NOT_KEPT, is a specific case. */
const CODE_OF_STATUS = new Map<number, ErrorCode>();
for (const code of ERROR_CODE_NAMES) if (!CODE_OF_STATUS.has(ERROR_CODES[code])) CODE_OF_STATUS.set(ERROR_CODES[code], code);

/** Hono's own middleware throws bare HTTPExceptions (body limit, bearer auth, malformed JSON). */
export function codeOfStatus(status: number): ErrorCode {
  return CODE_OF_STATUS.get(status) ?? (status >= 500 ? "INTERNAL_SERVER_ERROR" : "BAD_REQUEST");
}

const DEFAULT_MESSAGES: Record<ErrorCode, string> = {
  BAD_REQUEST: "bad request",
  UNAUTHORIZED: "unauthorized",
  FORBIDDEN: "forbidden",
  NOT_FOUND: "not found",
  CONFLICT: "conflict",
  PAYLOAD_TOO_LARGE: "payload too large",
  UNSUPPORTED_MEDIA_TYPE: "unsupported media type",
  TOO_MANY_REQUESTS: "too many requests",
  INTERNAL_SERVER_ERROR: "internal error",
  SERVICE_UNAVAILABLE: "service unavailable",
  HOURS_NOT_KEPT: "hours not kept",
  ANALYTICS_UNAVAILABLE: "analytics unavailable",
};

/**
 * app.onError's only output, so no route writes an error body of its own. The request id goes in
 * the body and `X-Request-Id`, so an answer quoted in a report finds its log lines.
 */
export function errorResponse(err: unknown, requestId?: string): Response {
  let status: ContentfulStatusCode = 500;
  let headers = new Headers();
  let body: ErrorBody = { error: DEFAULT_MESSAGES.INTERNAL_SERVER_ERROR, code: "INTERNAL_SERVER_ERROR" };
  if (err instanceof HTTPException) {
    const code = err instanceof ApiError ? err.code : codeOfStatus(err.status);
    status = err.status;
    headers = new Headers(err.res?.headers);
    body = { error: err.message || DEFAULT_MESSAGES[code], code };
    if (err instanceof ApiError && err.limit !== undefined) body.limit = err.limit;
  }
  headers.set("content-type", "application/json");
  if (requestId !== undefined) {
    body.request_id = requestId;
    headers.set(REQUEST_ID_HEADER, requestId);
  }
  return new Response(JSON.stringify(body), { status, headers });
}

export function isJsonContentType(header: string | undefined): boolean {
  return header?.split(";", 1)[0]?.trim().toLowerCase() === "application/json";
}

/** Not `application/json` is a 415, never read as `{}`; the input is never echoed. */
export function validBody<T extends z.ZodType>(schema: T) {
  return zValidator("json", schema, (result, c) => {
    if (!isJsonContentType(c.req.header("content-type"))) {
      throw apiError("UNSUPPORTED_MEDIA_TYPE", "content type must be application/json");
    }
    if (!result.success) throw apiError("BAD_REQUEST", "invalid body");
  });
}
