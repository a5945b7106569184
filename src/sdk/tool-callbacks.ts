// McpServer's tool callbacks, wrapped at dispatch (SPEC §4 "Facts about the MCP SDKs"): what the
// callback did is the one source that tells bad_args, tool_error and crashed apart (outcome.ts).
import type { CallbackRecord } from "./outcome.ts";
import { isRecord } from "./request-facts.ts";
import type { WatchState } from "./watch-state.ts";

/** Marks functions this SDK made, so nothing is wrapped twice. */
const INSTRUMENTED = Symbol.for("mcpulse-edge.sdk.instrumented");
/**
 * Ties a tool callback to its tools/call: keyed by the request's AbortSignal, which the MCP SDKs
 * pass along to the callback (1.x `extra.signal`, 2.x `ctx.mcpReq.signal`) and which survives the
 * shallow copies the SDKs make of that context.
 */
export const callbackBySignal = new WeakMap<object, CallbackRecord>();

export function markInstrumented<F extends object>(fn: F): F {
  Object.defineProperty(fn, INSTRUMENTED, { value: true });
  return fn;
}

export function isInstrumented(fn: unknown): boolean {
  return typeof fn === "function" && (fn as unknown as Record<symbol, unknown>)[INSTRUMENTED] === true;
}

export function signalOf(context: unknown): object | undefined {
  if (!isRecord(context)) return undefined;
  if (isRecord(context.signal)) return context.signal;
  const mcpReq = context.mcpReq;
  return isRecord(mcpReq) && isRecord(mcpReq.signal) ? mcpReq.signal : undefined;
}

// 2.x calls the closure `executor` (replacing `handler` there does nothing); 1.32 reads `handler`
// at call time; 1.17 calls `callback`.
const CALLBACK_PROPERTIES = ["executor", "handler", "callback"] as const;

/**
 * Wraps a tool's callback once, looked up at dispatch time (SPEC §4 "Facts about the MCP SDKs").
 * Returns false when the tool exists but has no callback function to wrap (a task tool's handler
 * object): then the answer, not the callback, has to decide the outcome.
 */
export function wrapToolCallbackAtDispatch(state: WatchState, toolName: string): boolean {
  if (state.shape.kind !== "mcp") return false;
  const tools = state.shape.high._registeredTools;
  // An unknown tool: its callback can never run, so the call is bad_args.
  if (!Object.hasOwn(tools, toolName)) return true;
  const tool = tools[toolName];
  if (!isRecord(tool)) return true;
  for (const property of CALLBACK_PROPERTIES) {
    const callback = tool[property];
    if (typeof callback === "function") {
      if (!isInstrumented(callback)) tool[property] = markInstrumented(recordingCallback(callback as (...args: unknown[]) => unknown));
      return true;
    }
  }
  return false;
}

function recordingCallback(callback: (...args: unknown[]) => unknown): (...args: unknown[]) => unknown {
  return function recorded(this: unknown, ...args: unknown[]) {
    const signal = signalOf(args[args.length - 1]);
    const record = signal ? callbackBySignal.get(signal) : undefined;
    if (!record) return callback.apply(this, args);
    record.ran = true;
    let returned: unknown;
    try {
      returned = callback.apply(this, args);
    } catch (error) {
      record.status = "threw";
      throw error;
    }
    if (returned instanceof Promise && Object.getPrototypeOf(returned) === Promise.prototype) {
      // A native promise (2.x's executor is an async function) is observed beside the MCP SDK's
      // own await, not put in front of it: registered first, these reactions run first, and the
      // SDK waits on the callback's promise itself, one step sooner.
      returned.then(
        (value: unknown) => {
          record.status = "returned";
          record.result = value;
        },
        () => {
          record.status = "threw";
        },
      );
      return returned;
    }
    if (isRecord(returned) && typeof (returned as { then?: unknown }).then === "function") {
      // Any other thenable: its `then` is called once, as the MCP SDK would (a lazy thenable may
      // start its work there).
      return (returned as unknown as PromiseLike<unknown>).then(
        (value) => {
          record.status = "returned";
          record.result = value;
          return value;
        },
        (error: unknown) => {
          record.status = "threw";
          throw error;
        },
      );
    }
    record.status = "returned";
    record.result = returned;
    return returned;
  };
}
