// A call payload (SPEC §1.2) and the request body `{"batch":[…]}` (SPEC §1.1) that carries it.
//
// The body is exactly the text `JSON.stringify({ batch })` writes. For call payloads it is put
// together from parts: what a session's calls share — session, client, tool, versions, session kind,
// transport — is written once and reused while the calls in a row share it, and only each call's
// own members are written per call. `JSON.stringify` of a 16-member object per call was the body's
// whole cost (bench:sdk measures the SDK's CPU per call); test/sdk/call-payload.test.ts checks the
// text against `JSON.stringify` for any values.

/** One tool call as sent, its members in wire order (`args_hash` is filled in before the send). */
export class CallPayload {
  v: 1;
  type: "call";
  session_id: string;
  client_name: string;
  tool_name: string;
  started_at: string;
  duration_ms: number;
  outcome: string;
  response_bytes: number;
  is_empty: boolean;
  args_hash: string;
  client_version: string | null;
  server_version: string | null;
  protocol_version: string | null;
  session_kind: string;
  transport: string;

  constructor(
    session_id: string,
    client_name: string,
    tool_name: string,
    started_at: string,
    duration_ms: number,
    outcome: string,
    response_bytes: number,
    is_empty: boolean,
    client_version: string | null,
    server_version: string | null,
    protocol_version: string | null,
    session_kind: string,
    transport: string,
  ) {
    // Assigned in the order declared: JSON.stringify writes them in this order too.
    this.v = 1;
    this.type = "call";
    this.session_id = session_id;
    this.client_name = client_name;
    this.tool_name = tool_name;
    this.started_at = started_at;
    this.duration_ms = duration_ms;
    this.outcome = outcome;
    this.response_bytes = response_bytes;
    this.is_empty = is_empty;
    this.args_hash = "";
    this.client_version = client_version;
    this.server_version = server_version;
    this.protocol_version = protocol_version;
    this.session_kind = session_kind;
    this.transport = transport;
  }
}

/** The members before `started_at`, as JSON (without the closing brace), for the last call that had them. */
let leadFor: { session: string; client: string; tool: string; text: string } | null = null;
/** The members after `args_hash`, as JSON, for the last call that had them. */
let tailFor: { client: string | null; server: string | null; protocol: string | null; kind: string; transport: string; text: string } | null = null;

/** Characters JSON.stringify escapes in a string: '"', '\', controls and lone surrogates. */
const NEEDS_ESCAPING = /["\\\u0000-\u001f\ud800-\udfff]/;

function jsonString(text: string): string {
  return NEEDS_ESCAPING.test(text) ? JSON.stringify(text) : `"${text}"`;
}

function leadOf(payload: CallPayload): string {
  const lead = leadFor;
  if (lead !== null && lead.session === payload.session_id && lead.client === payload.client_name && lead.tool === payload.tool_name) return lead.text;
  const text = `{"v":1,"type":"call","session_id":${jsonString(payload.session_id)},"client_name":${jsonString(payload.client_name)},"tool_name":${jsonString(payload.tool_name)}`;
  leadFor = { session: payload.session_id, client: payload.client_name, tool: payload.tool_name, text };
  return text;
}

function tailOf(payload: CallPayload): string {
  const tail = tailFor;
  if (
    tail !== null &&
    tail.client === payload.client_version &&
    tail.server === payload.server_version &&
    tail.protocol === payload.protocol_version &&
    tail.kind === payload.session_kind &&
    tail.transport === payload.transport
  ) {
    return tail.text;
  }
  const nullable = (value: string | null) => (value === null ? "null" : jsonString(value));
  const text =
    `,"client_version":${nullable(payload.client_version)},"server_version":${nullable(payload.server_version)}` +
    `,"protocol_version":${nullable(payload.protocol_version)},"session_kind":${jsonString(payload.session_kind)},"transport":${jsonString(payload.transport)}}`;
  tailFor = { client: payload.client_version, server: payload.server_version, protocol: payload.protocol_version, kind: payload.session_kind, transport: payload.transport, text };
  return text;
}

const isString = (value: unknown): value is string => typeof value === "string";
const isNullableString = (value: unknown): value is string | null => value === null || typeof value === "string";
const isFiniteNumber = (value: unknown): value is number => typeof value === "number" && value - value === 0;

/** The payload's JSON, as JSON.stringify writes it. */
function callJson(payload: CallPayload): string {
  // The members are typed, but nothing stops a caller from giving other values: those take JSON.stringify.
  if (
    !isString(payload.session_id) || !isString(payload.client_name) || !isString(payload.tool_name) ||
    !isString(payload.started_at) || !isFiniteNumber(payload.duration_ms) || !isString(payload.outcome) ||
    !isFiniteNumber(payload.response_bytes) || typeof payload.is_empty !== "boolean" || !isString(payload.args_hash) ||
    !isNullableString(payload.client_version) || !isNullableString(payload.server_version) ||
    !isNullableString(payload.protocol_version) || !isString(payload.session_kind) || !isString(payload.transport)
  ) {
    return JSON.stringify(payload);
  }
  // String(number) is JSON's number text for every finite number (-0 included: "0").
  return (
    `${leadOf(payload)},"started_at":${jsonString(payload.started_at)},"duration_ms":${String(payload.duration_ms)}` +
    `,"outcome":${jsonString(payload.outcome)},"response_bytes":${String(payload.response_bytes)},"is_empty":${payload.is_empty ? "true" : "false"}` +
    `,"args_hash":${jsonString(payload.args_hash)}${tailOf(payload)}`
  );
}

/** `JSON.stringify({ batch })`, exactly. */
export function batchJson(batch: readonly object[]): string {
  let out = '{"batch":[';
  for (let i = 0; i < batch.length; i++) {
    const item = batch[i]!;
    // Only this class's own instances: a subclass or an object with other members is not this shape.
    const json = Object.getPrototypeOf(item) === CallPayload.prototype ? callJson(item as CallPayload) : JSON.stringify(item);
    out += i === 0 ? json : `,${json}`;
  }
  return `${out}]}`;
}
