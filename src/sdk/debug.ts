// Debug output goes to stderr only: on a stdio server stdout is the MCP transport (SPEC §4).

export type DebugLog = (message: string) => void;

export const silent: DebugLog = () => {};

/** Writes one `[mcpulse]` line to stderr; never throws (SPEC §4 rule 1). */
export const toStderr: DebugLog = (message) => {
  try {
    const proc = (globalThis as { process?: { stderr?: { write?: (text: string) => unknown } } }).process;
    if (typeof proc?.stderr?.write === "function") {
      proc.stderr.write(`[mcpulse] ${message}\n`);
    } else {
      console.error(`[mcpulse] ${message}`);
    }
  } catch {
    // Rule 1, never throw (SPEC §4): logging is the last thing allowed to break a host.
  }
};

export function debugLog(enabled: boolean): DebugLog {
  return enabled ? toStderr : silent;
}
