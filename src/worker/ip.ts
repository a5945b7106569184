// IP addresses as the WHATWG URL parser writes them (already normalised), for alert targets and the
// sign-in throttle.

/** A dotted-decimal IPv4 address (the only form the URL parser leaves) as a 32-bit number, else null. */
export function ipv4Number(text: string): number | null {
  const match = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (!match) return null;
  const octets = match.slice(1).map(Number);
  if (octets.some((o) => o > 255)) return null;
  return ((octets[0]! << 24) >>> 0) + (octets[1]! << 16) + (octets[2]! << 8) + octets[3]!;
}

/** The eight 16-bit pieces of an IPv6 address written as hex pieces with `::` at most once, else null. */
export function ipv6Pieces(text: string): number[] | null {
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const parse = (part: string) => (part === "" ? [] : part.split(":").map((h) => (/^[0-9a-f]{1,4}$/i.test(h) ? parseInt(h, 16) : Number.NaN)));
  const head = parse(halves[0]!);
  const tail = halves.length === 2 ? parse(halves[1]!) : [];
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null;
  const pieces = [...head, ...Array<number>(halves.length === 2 ? missing : 0).fill(0), ...tail];
  return pieces.some(Number.isNaN) ? null : pieces;
}
