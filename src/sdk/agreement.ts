// Opt-in agreement (SPEC §4, §2.5): each declared tool's value is compared in-process with the
// other tools' latest values of the same field seen within the window; only the verdict leaves.
import { canonicalize } from "../shared/canonical.ts";
import { AGREE_RELATIVE_TOLERANCE } from "./constants.ts";

/** A numeric string as a model or an API writes one: `25.22`, `-1e3`, ` 7 `. */
const NUMERIC_TEXT = /^\s*[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\s*$/;

function asNumber(value: unknown): number | undefined {
  if (typeof value === "number") return Number.isFinite(value) ? value : undefined;
  if (typeof value === "string" && NUMERIC_TEXT.test(value)) {
    const parsed = Number(value);
    return Number.isFinite(parsed) ? parsed : undefined;
  }
  return undefined;
}

/**
 * Whether two values are the same answer: numbers and numeric strings within a relative
 * tolerance of 1e-4 (`25.22`, `25.220` and `"25.22"` agree); other strings exactly; anything
 * else by canonical JSON.
 */
export function valuesAgree(a: unknown, b: unknown): boolean {
  const numberA = asNumber(a);
  const numberB = asNumber(b);
  if (numberA !== undefined && numberB !== undefined) {
    if (numberA === numberB) return true;
    const scale = Math.max(Math.abs(numberA), Math.abs(numberB));
    return Math.abs(numberA - numberB) <= AGREE_RELATIVE_TOLERANCE * scale;
  }
  if (typeof a === "string" || typeof b === "string") return a === b;
  try {
    return canonicalize(a) === canonicalize(b);
  } catch {
    return false;
  }
}

/** Follows `a.b.0.c` through objects and arrays; `undefined` when any step is missing. */
export function valueAtPath(root: unknown, path: string): unknown {
  let current: unknown = root;
  for (const step of path.split(".")) {
    if (current === null || typeof current !== "object") return undefined;
    if (!Object.hasOwn(current, step)) return undefined;
    current = (current as Record<string, unknown>)[step];
  }
  return current;
}

/**
 * The value a tool's result holds at `path`: looked up in `structuredContent` first, then in the
 * JSON of a single text part (tools that predate structured output return JSON as text).
 */
export function valueInResult(result: unknown, path: string): unknown {
  if (result === null || typeof result !== "object") return undefined;
  const record = result as { structuredContent?: unknown; content?: unknown };
  if (record.structuredContent !== undefined) {
    const found = valueAtPath(record.structuredContent, path);
    if (found !== undefined) return found;
  }
  if (Array.isArray(record.content)) {
    for (const part of record.content as { type?: unknown; text?: unknown }[]) {
      if (part && part.type === "text" && typeof part.text === "string") {
        try {
          const found = valueAtPath(JSON.parse(part.text), path);
          if (found !== undefined) return found;
        } catch {
          // prose, not JSON
        }
      }
    }
  }
  return undefined;
}

export interface Verdict {
  field: string;
  tool_a: string;
  tool_b: string;
  agreed: boolean;
}

interface Observation {
  value: unknown;
  atMs: number;
}

/** The latest value per (field, tool); one per destination, shared by every watch() of it. */
export class AgreementTracker {
  private readonly latest = new Map<string, Map<string, Observation>>();

  /**
   * Records `tool`'s value of `field` and returns one verdict per other tool of the field whose
   * latest value was seen within `windowMs` before now. Pairs are named in sorted order so
   * (a, b) and (b, a) count together.
   */
  observe(field: string, tool: string, value: unknown, nowMs: number, windowMs: number): Verdict[] {
    let byTool = this.latest.get(field);
    if (!byTool) {
      byTool = new Map();
      this.latest.set(field, byTool);
    }
    const verdicts: Verdict[] = [];
    for (const [otherTool, seen] of byTool) {
      if (otherTool === tool) continue;
      if (nowMs - seen.atMs > windowMs) {
        byTool.delete(otherTool); // stale: outside the window, never compared again
        continue;
      }
      const [toolA, toolB] = tool < otherTool ? [tool, otherTool] : [otherTool, tool];
      verdicts.push({ field, tool_a: toolA, tool_b: toolB, agreed: valuesAgree(value, seen.value) });
    }
    byTool.set(tool, { value, atMs: nowMs });
    return verdicts;
  }
}
