// Text as the worker stores it: shared by the D1 writes and the Analytics Engine data points.

/**
 * The text as D1 can store it: a lone UTF-16 surrogate (JSON allows "\ud800"; UTF-8 cannot encode
 * it) becomes U+FFFD, as TextEncoder would write it, instead of being mangled into three
 * replacement characters by SQLite's JSON functions. Two names that differ only there become one.
 */
export function wellFormed(text: string): string {
  return /[\ud800-\udfff]/.test(text) ? text.replace(/\p{Cs}/gu, "\ufffd") : text;
}
