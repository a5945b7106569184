// Which URLs a destination may point at (SPEC §5), and the hint lists show instead of the URL.
// A destination URL is a secret (a Slack or Discord webhook URL is its own credential): it is stored,
// compared and fetched, never answered after creation and never logged.
import { ipv4Number, ipv6Pieces } from "../ip.ts";

/** Hosts a local worker may reach over plain http (SPEC §5): the machine itself, nothing else. */
export const LOCAL_HTTP_HOSTS = ["127.0.0.1", "localhost", "[::1]"] as const;

/**
 * Whether the worker runs locally: the `LOCAL_DEV` variable is "true". `npm run dev` sets it
 * (`wrangler dev --var LOCAL_DEV:true`); wrangler.toml never does, so a deployed worker never has it.
 */
export function runsLocally(env: { LOCAL_DEV?: string | undefined }): boolean {
  return env.LOCAL_DEV === "true";
}

export type TargetRefusal = "not_a_url" | "not_https" | "credentials_in_url" | "not_public";
export type TargetCheck = { ok: true; url: URL } | { ok: false; reason: TargetRefusal };

/**
 * `https://` to a public host; `http://` to 127.0.0.1, localhost or [::1] only when running locally
 * (SPEC §5). Judged on the WHATWG parser's normal form, so one check covers every spelling of an
 * address. A public name that resolves to a private address passes: workerd has no resolver to ask
 * (docs/alerts.md). Run at creation and before every delivery.
 */
export function checkTarget(raw: string, local: boolean): TargetCheck {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: "not_a_url" };
  }
  // user:password@ would be sent as a header we never meant to send; refuse it rather than strip it.
  if (url.username !== "" || url.password !== "") return { ok: false, reason: "credentials_in_url" };
  if (url.protocol === "http:" && local && (LOCAL_HTTP_HOSTS as readonly string[]).includes(url.hostname)) return { ok: true, url };
  if (url.protocol !== "https:") return { ok: false, reason: "not_https" };
  if (!isPublicHost(url.hostname)) return { ok: false, reason: "not_public" };
  return { ok: true, url };
}

/**
 * Suffixes of names that lead into a private network rather than the internet: the machine itself
 * (RFC 6761), mDNS, home networks (RFC 8375), ICANN's private-use `.internal` (where cloud metadata
 * services live) and the pseudo-domains internal resolvers commonly answer for.
 */
const PRIVATE_NAME_SUFFIXES = ["localhost", "localdomain", "local", "internal", "intranet", "home.arpa", "home", "lan", "corp", "private"] as const;

/**
 * Whether a URL's hostname (WHATWG normal form) may be a webhook's host: a domain name of at least
 * two labels outside the private suffixes, or an IP address outside every special-purpose range.
 */
export function isPublicHost(hostname: string): boolean {
  if (hostname.startsWith("[")) {
    const pieces = ipv6Pieces(hostname.slice(1, -1));
    return pieces !== null && isPublicIpv6(pieces);
  }
  const ipv4 = ipv4Number(hostname);
  if (ipv4 !== null) return isPublicIpv4(ipv4);
  // `localhost.` and `localhost` are one name to a resolver.
  const name = hostname.replace(/\.+$/, "");
  // A single label (`metadata`, `intranet`) is completed by the resolver's search list: never public.
  if (name === "" || !name.includes(".")) return false;
  return !PRIVATE_NAME_SUFFIXES.some((suffix) => name === suffix || name.endsWith("." + suffix));
}

/** IPv4 ranges that are not the public internet (IANA's special-purpose registry, RFC 6890 and after). */
const NON_PUBLIC_IPV4: readonly (readonly [string, number])[] = [
  ["0.0.0.0", 8], // "this network"
  ["10.0.0.0", 8], // private (RFC 1918)
  ["100.64.0.0", 10], // carrier-grade NAT (RFC 6598)
  ["127.0.0.0", 8], // loopback
  ["169.254.0.0", 16], // link-local, where cloud metadata services answer (169.254.169.254)
  ["172.16.0.0", 12], // private
  ["192.0.0.0", 24], // IETF protocol assignments
  ["192.0.2.0", 24], // documentation
  ["192.88.99.0", 24], // 6to4 relay anycast
  ["192.168.0.0", 16], // private
  ["198.18.0.0", 15], // benchmarking
  ["198.51.100.0", 24], // documentation
  ["203.0.113.0", 24], // documentation
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, and 255.255.255.255
];
const NON_PUBLIC_IPV4_RANGES = NON_PUBLIC_IPV4.map(([base, bits]) => ({ base: ipv4Number(base)!, bits }));

function isPublicIpv4(address: number): boolean {
  return !NON_PUBLIC_IPV4_RANGES.some(({ base, bits }) => (address ^ base) >>> (32 - bits) === 0);
}

/**
 * Global unicast (2000::/3) outside its special blocks, with an embedded IPv4 address judged as
 * IPv4: IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d), NAT64 (64:ff9b::a.b.c.d) and
 * 6to4 (2002:aabb:ccdd::) reach the address they embed.
 */
function isPublicIpv6(p: number[]): boolean {
  const embedded = (hi: number, lo: number) => ((hi << 16) >>> 0) + lo;
  const zeros = (from: number, to: number) => p.slice(from, to).every((x) => x === 0);
  if (zeros(0, 5) && p[5] === 0xffff) return isPublicIpv4(embedded(p[6]!, p[7]!));
  if (zeros(0, 6)) return isPublicIpv4(embedded(p[6]!, p[7]!));
  if (p[0] === 0x64 && p[1] === 0xff9b && zeros(2, 6)) return isPublicIpv4(embedded(p[6]!, p[7]!));
  if (p[0] === 0x2002) return isPublicIpv4(embedded(p[1]!, p[2]!));
  // Outside 2000::/3 nothing is public: ::/8 (loopback, unspecified, SIIT), fc00::/7 (unique local),
  // fe80::/10 (link-local), fec0::/10 (old site-local), ff00::/8 (multicast), 100::/64 (discard).
  if ((p[0]! & 0xe000) !== 0x2000) return false;
  // 2001::/23 (Teredo and IETF assignments, which hide or reserve addresses) and 2001:db8::/32 (documentation).
  if (p[0] === 0x2001 && (p[1]! < 0x200 || p[1] === 0xdb8)) return false;
  return true;
}

/** Characters of the URL's end that the hint keeps, when the path is long enough to spare them. */
const HINT_TAIL_CHARS = 4;
const HINT_MIN_PATH_CHARS = 16;

/**
 * What a list shows instead of the URL: scheme and host, then "…" and the last 4 characters of the
 * path when it has at least 16 (enough to tell two webhooks of one host apart, never enough to use).
 */
export function urlHint(url: URL): string {
  const path = url.pathname + url.search;
  const tail = path.length >= HINT_MIN_PATH_CHARS ? path.slice(-HINT_TAIL_CHARS) : "";
  return `${url.protocol}//${url.host}/…${tail}`;
}
