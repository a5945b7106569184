// The four outcomes (SPEC §4). Neither the result nor the error the MCP SDK produces can tell
// them apart on McpServer, so there the wrapped tool callback is the source of truth.
import { INVALID_PARAMS_CODE } from "./constants.ts";

export type CallOutcome = "ok" | "bad_args" | "tool_error" | "crashed";

/** What the wrapped tool callback did during one tools/call. */
export interface CallbackRecord {
  ran: boolean;
  status: "pending" | "returned" | "threw";
  result: unknown;
}

export function isErrorResult(result: unknown): boolean {
  return result !== null && typeof result === "object" && (result as { isError?: unknown }).isError === true;
}

/**
 * McpServer (1.x and 2.x): a result that fails the tool's own output schema is `crashed` (the MCP SDK
 * answers an error although the callback succeeded); a callback that never ran is `bad_args`.
 */
export function outcomeOfToolCallback(callback: CallbackRecord, handlerThrew: boolean, finalResult: unknown): CallOutcome {
  if (!callback.ran) return "bad_args";
  if (callback.status === "threw") return "crashed";
  if (callback.status === "returned") {
    if (isErrorResult(callback.result)) return "tool_error";
    if (handlerThrew || isErrorResult(finalResult)) return "crashed";
    return "ok";
  }
  // Ran but never settled before the handler did (not a path the SDKs take): judge the answer.
  if (handlerThrew) return "crashed";
  return isErrorResult(finalResult) ? "tool_error" : "ok";
}

/** A low-level Server's tools/call handler is the callback: −32602 (invalid params) is `bad_args`. */
export function outcomeOfHandler(threw: boolean, error: unknown, result: unknown): CallOutcome {
  if (threw) {
    const code = error !== null && typeof error === "object" ? (error as { code?: unknown }).code : undefined;
    return code === INVALID_PARAMS_CODE ? "bad_args" : "crashed";
  }
  return isErrorResult(result) ? "tool_error" : "ok";
}
