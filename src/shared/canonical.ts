// RFC 8785 (JCS) canonical JSON as SPEC §1.3 defines it for args_hash: JSON.stringify's value
// rules (toJSON, boxed primitives, undefined/function/symbol members dropped, array holes as
// null, strings exactly as JSON.stringify writes them) with object keys sorted by UTF-16 code unit
// at every depth and no whitespace.
//
// Speed matters (args_hash runs on every tool call, SPEC §4 "never block"), so a subtree that is
// already canonical — plain objects with keys in order, arrays, primitives, a few levels deep; most
// leaves of real argument objects — is handed to the engine's own JSON.stringify, which writes
// exactly the canonical form for it; everything else is written here. bench/wire.ts measures it against the
// `canonicalize` package and test/shared/canonical.test.ts checks it against a plain reference.

/** Thrown for values JSON cannot represent: NaN, ±Infinity, BigInt, cycles, a bare undefined. */
export class CanonicalizeError extends Error {
  override name = "CanonicalizeError";
}

/**
 * The RFC 8785 canonical form of `value`. Throws `CanonicalizeError` on NaN, ±Infinity, BigInt,
 * cycles, and on a top-level value JSON.stringify would skip (undefined, a function, a symbol).
 *
 * Why not the `canonicalize` npm package directly: it throws on lone surrogates, which SPEC §1.3
 * requires to be written as `\udxxx` (every JavaScript string hashes), it neither unwraps boxed
 * primitives nor passes the key to `toJSON` as JSON.stringify does, and it is slower (bench/wire.ts).
 */
export function canonicalize(value: unknown): string {
  if (typeof value === "object" && value !== null) {
    const text = stringifySorted(value);
    if (text !== undefined) return text;
  }
  const text = serializeProperty(value, "", []);
  if (text === undefined) throw new CanonicalizeError("value is not representable as JSON");
  return text;
}

// ---- the fast path: the engine's JSON.stringify over a copy with keys in order ----
//
// Plain data (what a tool call's arguments are: JSON-parsed objects and arrays of strings, finite
// numbers, booleans and null) is canonical as soon as every object's keys are in UTF-16 order. So
// the fast path walks the value once, reuses every subtree that is already in order and copies
// the objects that are not, with their keys inserted in order (a plain object enumerates string
// keys in insertion order), then hands the result to JSON.stringify: one native pass, which also
// gives the hash a flat string. It declines, and the general writer below takes over, at anything
// where JSON.stringify and canonical JSON could differ or where copying could change the value:
// toJSON, boxed primitives and other non-plain prototypes, BigInt, NaN and ±Infinity, a
// digit-leading key in an object it copies (integer-like keys enumerate first, in numeric order),
// an own `__proto__` key, and nesting deeper than FAST_PATH_MAX_DEPTH (so a cycle is reported by
// the general writer). It exists for speed: bench:sdk measures the SDK's cost per call.

/** Nesting the fast path follows before it leaves the value to the general writer. */
const FAST_PATH_MAX_DEPTH = 32;

/** Thrown inside the fast path only: this value is the general writer's. */
const DECLINE: unique symbol = Symbol("canonical fast path declines");

function stringifySorted(value: object): string | undefined {
  try {
    return JSON.stringify(sortedCopy(value, 0));
  } catch (thrown) {
    if (thrown === DECLINE) return undefined;
    throw thrown;
  }
}

/** Whether a member needs no walk: JSON.stringify writes it canonically as it is. Declines on BigInt, NaN, ±Infinity. */
function isSettledLeaf(item: unknown): boolean {
  switch (typeof item) {
    case "number":
      if (item - item !== 0) throw DECLINE;
      return true;
    case "bigint":
      throw DECLINE;
    case "object":
      return item === null;
    default:
      return true; // strings, booleans, and what both skip: undefined, functions, symbols
  }
}

/** `value` itself when it is already canonical throughout, else a copy with every object's keys in order. */
function sortedCopy(value: object, depth: number): object {
  if (depth > FAST_PATH_MAX_DEPTH || typeof (value as { toJSON?: unknown }).toJSON === "function") throw DECLINE;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      if (isSettledLeaf(item)) continue;
      const sorted = sortedCopy(item as object, depth + 1);
      if (sorted !== item) (copy ??= value.slice())[i] = sorted;
    }
    return copy ?? value;
  }
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) throw DECLINE;
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  let inOrder = 1;
  while (inOrder < keys.length && keys[inOrder - 1]! < keys[inOrder]!) inOrder++;
  if (inOrder >= keys.length) {
    // Keys already in order: copied only if a member had to be.
    let copy: Record<string, unknown> | undefined;
    for (const key of keys) {
      const item = record[key];
      if (isSettledLeaf(item)) continue;
      const sorted = sortedCopy(item as object, depth + 1);
      if (sorted !== item) (copy ??= copyInOrder(record, keys, prototype))[key] = sorted;
    }
    return copy ?? value;
  }
  sortCodeUnits(keys);
  const copy = emptyLike(prototype);
  for (const key of keys) {
    checkCopyableKey(key);
    const item = record[key];
    copy[key] = isSettledLeaf(item) ? item : sortedCopy(item as object, depth + 1);
  }
  return copy;
}

function emptyLike(prototype: object | null): Record<string, unknown> {
  return prototype === null ? (Object.create(null) as Record<string, unknown>) : {};
}

/** A key a copy can take in its sorted place: not integer-like (those enumerate first), not `__proto__`. */
function checkCopyableKey(key: string): void {
  const first = key.charCodeAt(0);
  if ((first >= 0x30 && first <= 0x39) || key === "__proto__") throw DECLINE;
}

/** A copy of an object whose keys are in order: the same keys enumerate the same way, so only `__proto__` declines. */
function copyInOrder(record: Record<string, unknown>, keys: readonly string[], prototype: object | null): Record<string, unknown> {
  const copy = emptyLike(prototype);
  for (const key of keys) {
    if (key === "__proto__") throw DECLINE;
    copy[key] = record[key];
  }
  return copy;
}

/** SerializeJSONProperty of ECMA-262 §25.5.2.2, with sorted keys; undefined = member skipped. */
function serializeProperty(value: unknown, key: string, ancestors: object[]): string | undefined {
  switch (typeof value) {
    case "string":
      return quote(value);
    case "number":
      return serializeNumber(value);
    case "boolean":
      return value ? "true" : "false";
    case "object": {
      if (value === null) return "null";
      const toJSON = (value as { toJSON?: unknown }).toJSON;
      if (typeof toJSON === "function") return serializeResolved(toJSON.call(value, key), ancestors);
      return serializeContainer(value, ancestors);
    }
    case "bigint": {
      // A BigInt.prototype.toJSON installed by the host is honoured, as JSON.stringify does.
      const toJSON = (BigInt.prototype as { toJSON?: unknown }).toJSON;
      if (typeof toJSON === "function") return serializeResolved(toJSON.call(value, key), ancestors);
      throw new CanonicalizeError("BigInt is not representable as JSON");
    }
    default:
      // undefined, functions and symbols: skipped in objects, null in arrays (as JSON.stringify).
      return undefined;
  }
}

/**
 * A value that toJSON already produced: serialised without calling toJSON again. serializeProperty
 * looks for a toJSON on objects and BigInts only, so it writes every other value as this must; the
 * check sits here, after a toJSON call, and never on the per-member path.
 */
function serializeResolved(value: unknown, ancestors: object[]): string | undefined {
  if (typeof value === "object" && value !== null) return serializeContainer(value, ancestors);
  if (typeof value === "bigint") throw new CanonicalizeError("BigInt is not representable as JSON");
  return serializeProperty(value, "", ancestors);
}

// Characters JSON.stringify escapes: '"', '\', controls, and (only when lone) surrogates.
const NEEDS_ESCAPING = /["\\\u0000-\u001f\ud800-\udfff]/;

/** A string exactly as JSON.stringify writes it (short escapes, lowercase \u00xx, \udxxx). */
function quote(text: string): string {
  return NEEDS_ESCAPING.test(text) ? JSON.stringify(text) : `"${text}"`;
}

/** ECMAScript Number::toString is exactly RFC 8785's number form, except -0 which is "0". */
function serializeNumber(value: number): string {
  if (value - value !== 0) throw new CanonicalizeError("NaN and Infinity are not representable");
  return value === 0 ? "0" : String(value);
}

function serializeContainer(value: object, ancestors: object[]): string {
  // Already canonical throughout: the engine writes it faster than any JS loop.
  if (isStringifyReady(value, SHORTCUT_DEPTH)) return JSON.stringify(value);
  if (Array.isArray(value)) return serializeArray(value, ancestors);
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) {
    if (value instanceof Number) return serializeNumber(Number(value));
    if (value instanceof String) return quote(String(value));
    if (value instanceof Boolean) return value.valueOf() ? "true" : "false";
    if (value instanceof BigInt) throw new CanonicalizeError("BigInt is not representable as JSON");
  }
  return serializeObject(value as Record<string, unknown>, ancestors);
}

/**
 * Whether JSON.stringify writes `value` (a member) exactly as canonicalize would when it is a
 * member of a container: strings, finite numbers, booleans, null, and what both skip.
 */
function isPlainLeaf(value: unknown): boolean {
  switch (typeof value) {
    case "string":
    case "boolean":
    case "undefined":
    case "function":
    case "symbol":
      return true;
    case "number":
      return value - value === 0; // finite
    case "object":
      return value === null;
    default:
      return false; // bigint
  }
}

/** How many container levels the JSON.stringify shortcut inspects before giving up. */
const SHORTCUT_DEPTH = 3;

/**
 * Whether JSON.stringify already writes `value` canonically: leaves as above, arrays and plain
 * objects (no toJSON, no boxed primitives) whose keys are in UTF-16 order, at most `depth`
 * container levels deep. Bounded, so a cycle or a deep tree costs a few steps, not a walk.
 */
function isStringifyReady(value: unknown, depth: number): boolean {
  if (typeof value !== "object" || value === null) return isPlainLeaf(value);
  if (depth === 0 || typeof (value as { toJSON?: unknown }).toJSON === "function") return false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!isStringifyReady(value[i], depth - 1)) return false;
    return true;
  }
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return false;
  const keys = Object.keys(value);
  for (let i = 0; i < keys.length; i++) {
    if (i > 0 && keys[i - 1]! > keys[i]!) return false;
    if (!isStringifyReady((value as Record<string, unknown>)[keys[i]!], depth - 1)) return false;
  }
  return true;
}

function enter(value: object, ancestors: object[]): void {
  // A cycle is an object that contains itself; the same object twice side by side is not one.
  for (let i = 0; i < ancestors.length; i++) {
    if (ancestors[i] === value) throw new CanonicalizeError("cyclic structure");
  }
  ancestors.push(value);
}

function serializeArray(array: readonly unknown[], ancestors: object[]): string {
  const length = array.length;
  enter(array, ancestors);
  let out = "[";
  for (let i = 0; i < length; i++) {
    if (i > 0) out += ",";
    out += serializeProperty(array[i], String(i), ancestors) ?? "null";
  }
  ancestors.pop();
  return out + "]";
}

// `"key":` for keys seen before: argument objects repeat their keys (a list of records), and
// quoting is a good part of the cost. Bounded in count and key length; kept in memory only.
const MAX_CACHED_KEYS = 1024;
const MAX_CACHED_KEY_LENGTH = 64;
const memberPrefixes = new Map<string, string>();

function memberPrefix(key: string): string {
  let prefix = memberPrefixes.get(key);
  if (prefix === undefined) {
    prefix = quote(key) + ":";
    if (key.length <= MAX_CACHED_KEY_LENGTH) {
      if (memberPrefixes.size >= MAX_CACHED_KEYS) memberPrefixes.clear();
      memberPrefixes.set(key, prefix);
    }
  }
  return prefix;
}

function serializeObject(object: Record<string, unknown>, ancestors: object[]): string {
  const keys = Object.keys(object);
  const count = keys.length;
  sortCodeUnits(keys);
  enter(object, ancestors);
  let out = "{";
  for (let i = 0; i < count; i++) {
    const key = keys[i]!;
    const member = serializeProperty(object[key], key, ancestors);
    if (member === undefined) continue;
    const prefix = memberPrefix(key);
    out += out.length === 1 ? prefix + member : "," + prefix + member;
  }
  ancestors.pop();
  return out + "}";
}

/** Sorts by UTF-16 code unit (RFC 8785 §3.2.3): `<` on strings compares code units. */
function sortCodeUnits(keys: string[]): void {
  if (keys.length > 16) {
    keys.sort(); // the default sort also compares UTF-16 code units
    return;
  }
  for (let i = 1; i < keys.length; i++) {
    const key = keys[i]!;
    let j = i - 1;
    while (j >= 0 && keys[j]! > key) {
      keys[j + 1] = keys[j]!;
      j--;
    }
    keys[j + 1] = key;
  }
}
