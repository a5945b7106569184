// A result's size as the server sends it (SPEC §4 `response_bytes`, `schema_bytes`): 1.x sends a
// handler's result as is, 2.x passes it through the negotiated wire codec first.
import { utf16Length } from "../shared/hash.ts";
import { isRecord } from "./request-facts.ts";
import type { LowLevelServer } from "./shapes.ts";
import type { WatchState } from "./watch-state.ts";

/**
 * A result as the server puts it on the wire (SPEC §4: sizes are measured after the MCP SDK's own
 * normalisation). 2.x runs results through its wire codec, so it is applied here (pure, it copies);
 * 1.x sends as is. `undefined`: the codec refused the result, and the client gets an error instead.
 */
export function asSent(state: WatchState, method: string, result: unknown): unknown {
  const low = state.shape.low as LowLevelServer & {
    _negotiatedWireCodec?: () => { encodeResult?: (method: string, result: unknown, serverInfo: unknown) => unknown } | undefined;
    _outboundServerInfo?: () => unknown;
  };
  if (!isRecord(result) || typeof low._negotiatedWireCodec !== "function") return result;
  let codec: { encodeResult?: (method: string, result: unknown, serverInfo: unknown) => unknown } | undefined;
  let serverInfo: unknown;
  try {
    codec = low._negotiatedWireCodec();
    serverInfo = typeof low._outboundServerInfo === "function" ? low._outboundServerInfo() : undefined;
  } catch {
    return result; // not the shape measured in SPEC §4's facts: measure what the handler returned
  }
  if (!codec || typeof codec.encodeResult !== "function") return result;
  try {
    return codec.encodeResult(method, result, serverInfo);
  } catch {
    return undefined; // the MCP SDK answers an internal error instead of this result
  }
}

/** Members the 2.x codecs read or write on a tools/call result; with none of them present, what they add is fixed. */
const CODEC_TOUCHED_MEMBERS = ["resultType", "_meta", "capabilities", "tools", "ttlMs", "cacheScope"] as const;

/**
 * `response_bytes` of a tools/call result (SPEC §4) without encoding every result twice: the codec
 * only adds fixed members to a result that carries none it touches, so their length is learnt once
 * from a probe and added. Other results go through the codec. Conformance tests check it on the wire.
 */
export function sentLength(state: WatchState, result: unknown): number {
  const low = state.shape.low as LowLevelServer & {
    _negotiatedWireCodec?: () => { encodeResult?: (method: string, result: unknown, serverInfo: unknown) => unknown } | undefined;
    _outboundServerInfo?: () => unknown;
  };
  if (typeof low._negotiatedWireCodec !== "function" || !isRecord(result)) {
    const json = JSON.stringify(result);
    return typeof json === "string" ? utf16Length(json) : 0;
  }
  let fixedGrowth: number | undefined;
  try {
    const codec = low._negotiatedWireCodec();
    const serverInfo = typeof low._outboundServerInfo === "function" ? low._outboundServerInfo() : undefined;
    if (isRecord(codec) && typeof codec.encodeResult === "function" && !Array.isArray(result) && Object.getPrototypeOf(result) === Object.prototype) {
      let touched = false;
      for (const member of CODEC_TOUCHED_MEMBERS) if (member in result) touched = true;
      if (!touched) {
        const known = state.codecGrowth;
        if (known !== undefined && known.codec === codec && known.serverInfo === serverInfo) {
          fixedGrowth = known.addedChars;
        } else {
          const probe = { content: [] };
          const encoded = JSON.stringify(codec.encodeResult("tools/call", probe, serverInfo));
          if (typeof encoded === "string") {
            fixedGrowth = encoded.length - JSON.stringify(probe).length;
            state.codecGrowth = { codec, serverInfo, addedChars: fixedGrowth };
          }
        }
      }
    }
  } catch {
    fixedGrowth = undefined;
  }
  if (fixedGrowth !== undefined) {
    const json = JSON.stringify(result);
    // Added members follow a comma, except after an empty object: there the probe's count does not hold.
    if (typeof json === "string" && json !== "{}") return utf16Length(json) + fixedGrowth;
  }
  const sent = asSent(state, "tools/call", result);
  const json = sent === undefined ? undefined : JSON.stringify(sent);
  return typeof json === "string" ? utf16Length(json) : 0;
}
