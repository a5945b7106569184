// Names from producers (tools, clients, fields, descriptions) as the dashboard shows them (SPEC §3):
// isolated from the page's text direction, control characters made visible, long ones cut by the
// layout with the whole name on hover.
import type { FC } from "hono/jsx";

/**
 * Characters that show as nothing or reorder the text around them (controls, bidi, zero-width,
 * invisible operators, BOM). ZWJ/ZWNJ stay: emoji and several scripts need them.
 */
const HIDDEN = /[\p{Cc}\u00ad\u061c\u180e\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb]/gu;

function codePointLabel(ch: string): string {
  return `U+${(ch.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, "0")}`;
}

/** The name as plain text with every hidden character written as `\u{202E}` (titles, options, `<title>`). */
export function visibleName(name: string): string {
  return name.replace(HIDDEN, (ch) => `\\u{${codePointLabel(ch).slice(2)}}`);
}

/** The first `max` code points of the visible name, with `…` when it was longer (a `<select>` option). */
export function shortName(name: string, max: number): string {
  const points = [...visibleName(name)];
  return points.length <= max ? points.join("") : points.slice(0, max - 1).join("") + "…";
}

/**
 * A producer's name in the page: `<bdi>` (its direction cannot spill into the text around it), each
 * hidden character as a boxed `U+202E` (a box no name can type, so `a\u{202E}b` written out in
 * ASCII still looks different from a real override), cut by CSS at the column's width with the whole
 * visible name in `title`.
 */
export const Name: FC<{ text: string; wide?: boolean }> = ({ text, wide }) => {
  const parts: (string | ReturnType<FC>)[] = [];
  let last = 0;
  for (const m of text.matchAll(HIDDEN)) {
    if (m.index > last) parts.push(text.slice(last, m.index));
    parts.push(<span class="cc">{codePointLabel(m[0])}</span>);
    last = m.index + m[0].length;
  }
  if (last < text.length) parts.push(text.slice(last));
  return (
    <bdi class={wide ? "name wide" : "name"} title={visibleName(text)}>
      {parts}
    </bdi>
  );
};

/**
 * Text of ours that quotes producers' names (an insight's message): each occurrence of one of
 * `names` shown as a Name, the rest as it is.
 */
export const WithNames: FC<{ text: string; names: readonly string[] }> = ({ text, names }) => {
  const sorted = [...new Set(names)].filter((n) => n.length > 0).sort((a, b) => b.length - a.length);
  const parts: (string | ReturnType<FC>)[] = [];
  let rest = text;
  while (rest.length > 0) {
    let at = -1;
    let found = "";
    for (const n of sorted) {
      const i = rest.indexOf(n);
      if (i >= 0 && (at < 0 || i < at)) {
        at = i;
        found = n;
      }
    }
    if (at < 0) {
      parts.push(rest);
      break;
    }
    if (at > 0) parts.push(rest.slice(0, at));
    parts.push(<Name text={found} />);
    rest = rest.slice(at + found.length);
  }
  return <>{parts}</>;
};
