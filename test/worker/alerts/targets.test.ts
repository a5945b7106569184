// Where a destination may point (SPEC §5), judged on workerd's own URL parser: every private,
// loopback, link-local, unique-local, CGNAT and metadata host in each spelling the parser accepts
// (numeric, shortened, octal, hex, IPv4-mapped and -compatible IPv6), the public hosts beside them,
// and the exact local hosts a local worker may use over plain http.
import { describe, expect, it } from "vitest";
import { checkTarget, isPublicHost } from "../../../src/worker/alerts/targets.ts";

const REFUSED_HTTPS = [
  // link-local and the cloud metadata address, in every numeric spelling
  "https://169.254.169.254/latest/meta-data/",
  "https://0xa9fea9fe/",
  "https://2852039166/",
  "https://0251.0376.0251.0376/",
  "https://169.254.43518/",
  "https://[::ffff:169.254.169.254]/",
  "https://[::ffff:a9fe:a9fe]/",
  "https://[fe80::1]/",
  // loopback
  "https://127.0.0.1/",
  "https://127.0.0.1./",
  "https://127.1/",
  "https://0x7f000001/",
  "https://2130706433/",
  "https://0177.0.0.1/",
  "https://0x7f.1/",
  "https://127.255.255.254/",
  "https://[::1]/",
  "https://[0:0:0:0:0:0:0:1]/",
  "https://[::ffff:127.0.0.1]/",
  "https://[::127.0.0.1]/",
  "https://[::ffff:0:127.0.0.1]/",
  "https://[64:ff9b::127.0.0.1]/",
  "https://[2002:7f00:1::]/",
  "https://localhost/",
  "https://localhost./",
  "https://LOCALHOST/",
  "https://api.localhost/",
  // private, unique-local, CGNAT, unspecified, multicast, broadcast, documentation
  "https://10.0.0.1/",
  "https://10.255.255.255/",
  "https://012.1/",
  "https://172.16.0.1/",
  "https://172.31.255.255/",
  "https://192.168.0.1/",
  "https://192.168.255.255/",
  "https://[::ffff:192.168.1.1]/",
  "https://[fd00::1]/",
  "https://[fc00::]/",
  "https://100.64.0.1/",
  "https://100.127.255.255/",
  "https://0.0.0.0/",
  "https://0/",
  "https://[::]/",
  "https://224.0.0.1/",
  "https://255.255.255.255/",
  "https://192.0.2.1/",
  "https://[2001:db8::1]/",
  "https://[2001::1]/",
  "https://[ff02::1]/",
  // names that never leave the network
  "https://metadata.google.internal/computeMetadata/v1/",
  "https://metadata.google.internal./",
  "https://metadata/",
  "https://intranet/",
  "https://printer.local/",
  "https://router.home.arpa/",
  "https://db.internal/",
];

const PUBLIC_HTTPS = [
  "https://hooks.slack.com/services/T0/B0/x",
  "https://discord.com/api/webhooks/1/abc",
  "https://example.com/h",
  "https://8.8.8.8/",
  "https://1.1.1.1/",
  // just outside each private range
  "https://9.255.255.255/",
  "https://11.0.0.0/",
  "https://172.15.255.255/",
  "https://172.32.0.0/",
  "https://192.167.255.255/",
  "https://192.169.0.0/",
  "https://100.63.255.255/",
  "https://100.128.0.0/",
  "https://169.253.255.255/",
  "https://169.255.0.0/",
  "https://126.255.255.255/",
  "https://128.0.0.0/",
  "https://223.255.255.255/",
  "https://[2606:4700:4700::1111]/",
  "https://[::ffff:8.8.8.8]/",
  "https://[2002:808:808::]/",
  "https://localhost.example.com/",
  "https://internal.example.com/",
];

describe("destination hosts (SPEC §5)", () => {
  it.each(REFUSED_HTTPS)("refuses %s, locally or not", (url) => {
    expect(checkTarget(url, false)).toEqual({ ok: false, reason: "not_public" });
    expect(checkTarget(url, true)).toEqual({ ok: false, reason: "not_public" });
  });

  it.each(PUBLIC_HTTPS)("accepts %s", (url) => {
    expect(checkTarget(url, false)).toMatchObject({ ok: true });
  });

  it("lets a local worker use exactly http://127.0.0.1, http://localhost and http://[::1], on any port", () => {
    for (const url of ["http://127.0.0.1/h", "http://127.0.0.1:8080/h", "http://localhost:9/h", "http://[::1]:9/h", "http://LOCALHOST/h", "http://0x7f000001/h"]) {
      expect([url, checkTarget(url, true).ok]).toEqual([url, true]);
      expect([url, checkTarget(url, false)]).toEqual([url, { ok: false, reason: "not_https" }]);
    }
    // Every spelling the URL parser normalises to one of the three hosts is that host (docs/alerts.md lists them).
    const spellings = [
      "127.1", "127.0.1", "2130706433", "0x7f.1", "0177.0.0.1", "017700000001", "127.000.000.001", "127.0.0.1.", "%31%32%37.0.0.1", "１２７.０.０.１", "127。0。0。1",
      "LocalHost", "ｌｏｃａｌｈｏｓｔ", "[0:0:0:0:0:0:0:1]", "[0::1]", "[::0001]",
    ];
    for (const host of spellings) {
      const url = `http://${host}:8787/h`;
      expect([url, checkTarget(url, true).ok]).toEqual([url, true]);
      expect([url, checkTarget(url, false).ok]).toEqual([url, false]);
    }
    // A spelling that normalises to any other host is not one of the three hosts SPEC §5 names.
    for (const url of ["http://127.0.0.2/h", "http://127.1.0.1/h", "http://localhost./h", "http://localhost%2e/h", "http://api.localhost/h", "http://[::ffff:7f00:1]/h", "http://[::ffff:127.0.0.1]/h", "http://0.0.0.0/h", "http://[::]/h", "http://10.0.0.1/h", "http://example.com/h"]) {
      expect([url, checkTarget(url, true)]).toEqual([url, { ok: false, reason: "not_https" }]);
    }
    // https to the machine itself is not among them either: a worker never calls its own host's services.
    expect(checkTarget("https://127.0.0.1/h", true)).toEqual({ ok: false, reason: "not_public" });
  });

  it("names the other refusals", () => {
    expect(checkTarget("not a url", false)).toEqual({ ok: false, reason: "not_a_url" });
    expect(checkTarget("https://a:b@example.com/", false)).toEqual({ ok: false, reason: "credentials_in_url" });
    expect(checkTarget("ftp://example.com/", true)).toEqual({ ok: false, reason: "not_https" });
  });

  it("judges hosts in the parser's normal form", () => {
    expect(new URL("https://0x7f000001/").hostname).toBe("127.0.0.1");
    expect(new URL("https://[::ffff:127.0.0.1]/").hostname).toBe("[::ffff:7f00:1]");
    expect(isPublicHost("[::ffff:7f00:1]")).toBe(false);
    expect(isPublicHost("[::ffff:808:808]")).toBe(true);
    expect(isPublicHost("[not:an:address]")).toBe(false);
  });
});
