// What each figure means, worded once from SPEC §2 and used everywhere a person or a model reads a
// definition: the MCP tools' descriptions and output schemas (mcp/), and the dashboard's
// explanations and column titles (dashboard/). Change a definition here and every reader sees it.

/** SPEC §2.2: the sequence a retry is looked for in. */
export const SEQUENCE =
  "the calls of one session, one client and one tool, in the order they started";

/** SPEC §2.2: what a chain is (first_call_attempts counts them). */
const CHAIN =
  "a call that is not a retry followed by the unbroken run of retries after it, so every call that is not a retry " +
  "starts one; a call without a known session is a chain of one. A chain counts in the hour and client of its first call";

export const DEFINITIONS = {
  calls: "tool calls in the range",
  ok: "calls whose outcome was ok, empty ones included (empty ⊆ ok; ok + bad_args + tool_error + crashed = calls)",
  empty: "ok calls whose result was empty (not an error)",
  bad_args: "calls the tool never ran because the model's arguments failed validation (fix the description or the schema)",
  tool_error: "the tool ran and answered with an error",
  crashed: "the tool threw or broke its own output schema (fix the code)",
  retry:
    `a call is a retry when, in ${SEQUENCE}, it is the very next call after a call c, starts 0–30 s after c ended, ` +
    "and has DIFFERENT arguments (args_hash) from c. A repeat with the same arguments (pagination, polling) is never a retry; " +
    "a call that starts before the previous one ended (parallel) is never a retry; a call without a known session is never a retry",
  retries: "calls that are retries (see retry)",
  chain: CHAIN,
  first_call_ok: "chains whose first call was ok, not empty, and not retried",
  first_call_attempts: `chains: a chain is ${CHAIN}`,
  first_call_rate:
    "first_call_ok ÷ first_call_attempts, 4 decimals (null without chains): how often the model got the tool right at the first call. " +
    "A first call that was ok but was followed by a retry (a different-arguments call within 30 s) does not count as a success",
  empty_rate: "empty ÷ calls, 4 decimals (null without calls)",
  error_rate: "(bad_args + tool_error + crashed) ÷ calls, 4 decimals (null without calls); empties are not errors",
  percentiles:
    "nearest-rank percentiles of duration_ms from a logarithmic histogram: within 5 % of the exact value, or within 1 ms under 20 ms " +
    "(null without calls)",
  without_session:
    "calls sent without a session: each is a chain of one (never a retry, never retried), so retries are measured only among calls " +
    "whose producer knew their session",
  without_args_hash:
    "calls sent without an args_hash (OpenTelemetry spans that do not record the arguments, SPEC §10): a retry is a call with " +
    "different arguments, so where such calls are, retries and first-call success cannot be measured and are reported as not measurable",
} as const;

/** The figures' definitions as one paragraph, for a tool description a model reads before calling. */
export const FIGURES_HELP =
  `Figures (SPEC §2): first_call_rate = ${DEFINITIONS.first_call_rate}. first_call_attempts = ${DEFINITIONS.first_call_attempts}. ` +
  `first_call_ok = ${DEFINITIONS.first_call_ok}. retries = calls that are retries: ${DEFINITIONS.retry}. ` +
  `ok = ${DEFINITIONS.ok}. empty = ${DEFINITIONS.empty}. bad_args = ${DEFINITIONS.bad_args}. tool_error = ${DEFINITIONS.tool_error}. ` +
  `crashed = ${DEFINITIONS.crashed}. error_rate = ${DEFINITIONS.error_rate}. empty_rate = ${DEFINITIONS.empty_rate}. ` +
  `duration_ms = ${DEFINITIONS.percentiles}. Durations are ms.`;
