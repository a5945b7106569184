// `is_empty` (SPEC §4): a successful call that returned nothing usable.

/** `{}`, `[]`, `""` and `null` are empty; `0`, `false`, prose and `{"count": 0}` are answers. */
export function isEmptyValue(value: unknown): boolean {
  if (value === null || value === "") return true;
  if (Array.isArray(value)) return value.length === 0;
  if (typeof value === "object") {
    // for…in stops at the first key, where Object.keys would copy every key of a large result.
    for (const key in value) if (Object.hasOwn(value, key)) return false;
    return true;
  }
  return false;
}

// Text that JSON.parse reads as [], {}, "" or null: only JSON's own whitespace may surround or
// separate the brackets, so a regular expression settles it without parsing large texts.
const EMPTY_JSON_TEXT = /^[ \t\n\r]*(?:\[[ \t\n\r]*\]|\{[ \t\n\r]*\}|""|null)[ \t\n\r]*$/;
const BLANK_TEXT = /^\s*$/;

/** `is_empty` of a tool result: `structuredContent` decides when present, else the content parts. */
export function isEmptyResult(result: unknown): boolean {
  if (result === null || typeof result !== "object") return false;
  const record = result as { structuredContent?: unknown; content?: unknown };
  if (record.structuredContent !== undefined) return isEmptyValue(record.structuredContent);
  const content = record.content;
  if (content === undefined || content === null) return true;
  if (!Array.isArray(content)) return false;
  if (content.length === 0) return true;
  if (content.length !== 1) return false;
  const part = content[0] as { type?: unknown; text?: unknown } | null;
  if (part === null || typeof part !== "object" || part.type !== "text") return false;
  if (typeof part.text !== "string") return true;
  return BLANK_TEXT.test(part.text) || EMPTY_JSON_TEXT.test(part.text);
}
