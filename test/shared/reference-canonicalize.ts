// A deliberately plain RFC 8785 serializer, kept as the reference the optimised canonicalize in
// src/shared/canonical.ts is differential-tested against: one recursive function per JSON.stringify
// rule, no shortcuts.

/** The reference canonical form; throws where canonicalize must throw. */
export function referenceCanonicalize(value: unknown): string {
  const text = serializeProperty(value, "", []);
  if (text === undefined) throw new Error("value is not representable as JSON");
  return text;
}

/** SerializeJSONProperty of ECMA-262 §25.5.2.2, with sorted keys; undefined = member skipped. */
function serializeProperty(input: unknown, key: string, ancestors: object[]): string | undefined {
  let value = input;
  if (typeof value === "object" && value !== null) {
    const toJSON = (value as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === "function") value = toJSON.call(value, key);
  } else if (typeof value === "bigint") {
    // A BigInt.prototype.toJSON installed by the host is honoured, as JSON.stringify does.
    const toJSON = (BigInt.prototype as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === "function") value = toJSON.call(value, key);
  }
  switch (typeof value) {
    case "string":
      // JSON.stringify already writes exactly the RFC 8785 string form (short escapes, lowercase
      // \u00xx for other controls, lone surrogates as \udxxx, nothing else escaped).
      return JSON.stringify(value);
    case "number":
      return serializeNumber(value);
    case "boolean":
      return value ? "true" : "false";
    case "bigint":
      throw new Error("BigInt is not representable as JSON");
    case "object":
      if (value === null) return "null";
      if (value instanceof Number) return serializeNumber(Number(value));
      if (value instanceof String) return JSON.stringify(String(value));
      if (value instanceof Boolean) return value.valueOf() ? "true" : "false";
      if (value instanceof BigInt) throw new Error("BigInt is not representable as JSON");
      return Array.isArray(value)
        ? serializeArray(value, ancestors)
        : serializeObject(value as Record<string, unknown>, ancestors);
    default:
      // undefined, functions and symbols: skipped in objects, null in arrays (as JSON.stringify).
      return undefined;
  }
}

/** ECMAScript Number::toString is exactly RFC 8785's number form, except -0 which is "0". */
function serializeNumber(value: number): string {
  if (!Number.isFinite(value)) throw new Error("NaN and Infinity are not representable");
  return value === 0 ? "0" : String(value);
}

function enter(value: object, ancestors: object[]): void {
  // A cycle is an object that contains itself; the same object twice side by side is not one.
  for (let i = 0; i < ancestors.length; i++) {
    if (ancestors[i] === value) throw new Error("cyclic structure");
  }
  ancestors.push(value);
}

function serializeArray(array: readonly unknown[], ancestors: object[]): string {
  enter(array, ancestors);
  let out = "[";
  const length = array.length;
  for (let i = 0; i < length; i++) {
    if (i > 0) out += ",";
    out += serializeProperty(array[i], String(i), ancestors) ?? "null";
  }
  ancestors.pop();
  return out + "]";
}

function serializeObject(object: Record<string, unknown>, ancestors: object[]): string {
  enter(object, ancestors);
  // The default sort compares UTF-16 code units, which is RFC 8785 §3.2.3's order.
  const keys = Object.keys(object).sort();
  let out = "{";
  let first = true;
  for (const key of keys) {
    const member = serializeProperty(object[key], key, ancestors);
    if (member === undefined) continue;
    out += (first ? "" : ",") + JSON.stringify(key) + ":" + member;
    first = false;
  }
  ancestors.pop();
  return out + "}";
}
