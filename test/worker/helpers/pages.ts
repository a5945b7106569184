// A dashboard page as a signed-in browser gets it: signs in once per read key through the real
// sign-in form (whatever the cookie holds), then sends that cookie with every page request.
import { exports } from "cloudflare:workers";

const cookies = new Map<string, string>();

async function signIn(key: string): Promise<string> {
  const known = cookies.get(key);
  if (known) return known;
  const res = await exports.default.fetch("http://worker/signin", {
    method: "POST",
    headers: { origin: "http://worker" },
    body: new URLSearchParams({ key }),
    redirect: "manual",
  });
  if (res.status !== 303) throw new Error(`sign-in: HTTP ${res.status}`);
  const cookie = (res.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
  cookies.set(key, cookie);
  return cookie;
}

/** The HTML of `path` for a browser signed in with `key`. */
export async function pageHtml(path: string, key: string): Promise<string> {
  const res = await exports.default.fetch(`http://worker${path}`, { headers: { cookie: await signIn(key) }, redirect: "manual" });
  if (res.status !== 200) throw new Error(`${path}: HTTP ${res.status}`);
  return res.text();
}
