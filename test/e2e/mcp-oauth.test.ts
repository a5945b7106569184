// OAuth 2.1 for /mcp end to end (SPEC §9): the real worker in Miniflare, and the MCP TypeScript SDK's
// own client OAuth (`auth()` with an OAuthClientProvider, StreamableHTTPClientTransport with
// `authProvider`) doing what Claude's and ChatGPT's connectors do — discovery from the 401, dynamic
// registration, authorization with PKCE S256 (the consent page driven with fetch, as a person's
// browser would submit it), the code exchange, tool calls, refresh with rotation and revocation.
// Around it: tokens of one project never see another's, a wrong verifier, an expired, a revoked
// token and the revoked read key's tokens are refused, Client ID Metadata Documents are never fetched
// from a private host, and the Origin rule holds for OAuth tokens as for read keys.
import {
  Client,
  StreamableHTTPClientTransport,
  auth,
  discoverAuthorizationServerMetadata,
  refreshAuthorization,
  type OAuthClientProvider,
} from "@modelcontextprotocol/client";
import { createServer, type Server } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { demoWorkload } from "./dashboard/demo-data.ts";
import { createProject, startWorker, type RunningWorker } from "./dashboard/start-worker.ts";
import { sharedLocalAnalytics } from "../../scripts/analytics-local.ts";
import { storedPayloadRows } from "./helpers/stored-rows.ts";

let worker: RunningWorker;
let project: Awaited<ReturnType<typeof createProject>>;
let other: Awaited<ReturnType<typeof createProject>>;

const REDIRECT = "http://127.0.0.1:9/callback";

beforeAll(async () => {
  // Explore (one of the tools a token reaches) reads the local stand-in for Analytics Engine, as `npm run dev` does.
  const analytics = await sharedLocalAnalytics();
  worker = await startWorker({ vars: { ANALYTICS_LOCAL_URL: analytics.url } });
  project = await createProject(worker, "Orders MCP server");
  other = await createProject(worker, "Someone else");
  const payloads = demoWorkload(Date.now()).payloads.slice(0, 300);
  const res = await fetch(`${worker.url}/v1/ingest`, {
    method: "POST",
    headers: { authorization: `Bearer ${project.ingest_key}`, "content-type": "application/json" },
    body: JSON.stringify({ batch: payloads }),
  });
  expect(res.status).toBe(202);
  const deadline = Date.now() + 20_000;
  while ((await storedPayloadRows(worker.db, project.project_id)) < payloads.length) {
    if (Date.now() > deadline) throw new Error("ingest did not land");
    await new Promise((r) => setTimeout(r, 20));
  }
  await worker.runRollup();
});

afterAll(async () => {
  await worker?.stop();
});

/** An OAuth client as the SDK expects one: it keeps what the flow hands it, and records where it was sent. */
class AgentProvider implements OAuthClientProvider {
  info: Awaited<ReturnType<OAuthClientProvider["clientInformation"]>>;
  stored: Awaited<ReturnType<OAuthClientProvider["tokens"]>>;
  verifier = "";
  authorizationUrl: URL | null = null;
  constructor(readonly name = "E2E agent") {}
  state() {
    return crypto.randomUUID();
  }
  get redirectUrl() {
    return REDIRECT;
  }
  get clientMetadata() {
    return { client_name: this.name, redirect_uris: [REDIRECT], grant_types: ["authorization_code", "refresh_token"], response_types: ["code"], token_endpoint_auth_method: "none" };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: NonNullable<AgentProvider["info"]>) {
    this.info = info;
  }
  tokens() {
    return this.stored;
  }
  saveTokens(tokens: NonNullable<AgentProvider["stored"]>) {
    this.stored = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}

/** `name=value` of each Set-Cookie. */
function cookiesOf(res: Response): string[] {
  return res.headers.getSetCookie().map((c) => c.split(";")[0]!);
}

/**
 * What a person does in the browser the app opened: the authorization page asks them to sign in
 * (a read key), the consent page shows the app, and "Allow" (or "Deny") sends them back to the app.
 * Answers the redirect back to the app, and the consent page's HTML.
 */
async function consent(authorizationUrl: URL, readKey: string, decision: "approve" | "deny" = "approve"): Promise<{ back: URL; page: string }> {
  const origin = worker.url;
  const first = await fetch(authorizationUrl, { redirect: "manual" });
  expect(first.status).toBe(401);
  const signInPage = await first.text();
  expect(signInPage).toContain("An app asks to read a project&#39;s metrics");
  const next = /name="next" value="([^"]+)"/.exec(signInPage)![1]!.replaceAll("&amp;", "&");
  const signIn = await fetch(`${origin}/signin`, {
    method: "POST",
    redirect: "manual",
    headers: { origin, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ key: readKey, next }),
  });
  expect(signIn.status).toBe(303);
  expect(signIn.headers.get("location")).toBe(next);
  const session = cookiesOf(signIn);
  const consentRes = await fetch(`${origin}${next}`, { redirect: "manual", headers: { cookie: session.join("; ") } });
  expect(consentRes.status).toBe(200);
  // The dashboard's policy: scripts only with this page's nonce, no framing.
  const csp = consentRes.headers.get("content-security-policy")!;
  expect(/script-src ([^;]*)/.exec(csp)![1]).not.toContain("unsafe-inline");
  expect(csp).toContain("frame-ancestors 'none'");
  const page = await consentRes.text();
  const handle = /name="handle" value="([^"]+)"/.exec(page)![1]!;
  const answer = await fetch(`${origin}/oauth/authorize`, {
    method: "POST",
    redirect: "manual",
    headers: { origin, "content-type": "application/x-www-form-urlencoded", cookie: [...session, ...cookiesOf(consentRes)].join("; ") },
    body: new URLSearchParams({ handle, decision }),
  });
  expect(answer.status, await answer.clone().text()).toBe(302);
  return { back: new URL(answer.headers.get("location")!), page };
}

/** The whole flow with the SDK: discovery and registration, consent, the code exchange. */
async function connectAgent(readKey: string, name?: string): Promise<AgentProvider> {
  const provider = new AgentProvider(name);
  expect(await auth(provider, { serverUrl: `${worker.url}/mcp` })).toBe("REDIRECT");
  const { back } = await consent(provider.authorizationUrl!, readKey);
  expect(back.origin + back.pathname).toBe(REDIRECT);
  const code = back.searchParams.get("code")!;
  expect(await auth(provider, { serverUrl: `${worker.url}/mcp`, authorizationCode: code, iss: back.searchParams.get("iss")! })).toBe("AUTHORIZED");
  return provider;
}

async function mcpClient(provider: OAuthClientProvider): Promise<Client> {
  const client = new Client({ name: "e2e-oauth", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${worker.url}/mcp`), { authProvider: provider }));
  return client;
}

type Row = { tool_name: string; calls: number };
async function toolsOf(client: Client): Promise<Row[]> {
  const result = (await client.callTool({ name: "list_tools_health", arguments: {} })) as { structuredContent: { tools: Row[] } };
  return result.structuredContent.tools;
}

/** One JSON-RPC call to /mcp with a bearer, answered by status (initialize: no session needed, stateless). */
async function rawMcp(token: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${worker.url}/mcp`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } }),
  });
}

describe("discovery (RFC 9728, RFC 8414)", () => {
  it("answers /mcp without a token with a challenge naming the protected-resource metadata", async () => {
    const res = await fetch(`${worker.url}/mcp`, { method: "POST" });
    expect(res.status).toBe(401);
    const challenge = res.headers.get("www-authenticate")!;
    expect(challenge).toMatch(/^Bearer /);
    expect(challenge).toContain(`resource_metadata="${worker.url}/.well-known/oauth-protected-resource/mcp"`);
    expect(challenge).toContain('scope="metrics:read"');
  });

  it("names the same metadata when a static key is wrong (the key check answers, and counts it)", async () => {
    const res = await rawMcp("mp_read_" + "x".repeat(32));
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toContain(`resource_metadata="${worker.url}/.well-known/oauth-protected-resource/mcp"`);
  });

  it("publishes the protected-resource metadata at both addresses, resource = origin + /mcp", async () => {
    for (const path of ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"]) {
      const res = await fetch(`${worker.url}${path}`);
      expect(res.status, path).toBe(200);
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
      const body = (await res.json()) as { resource: string; authorization_servers: string[]; scopes_supported: string[] };
      expect(body.resource).toBe(`${worker.url}/mcp`);
      expect(body.authorization_servers).toEqual([worker.url]);
      expect(body.scopes_supported).toEqual(["metrics:read"]);
    }
  });

  it("publishes authorization-server metadata: PKCE S256 only, iss, registration, revocation, CIMD", async () => {
    const res = await fetch(`${worker.url}/.well-known/oauth-authorization-server`);
    expect(res.status).toBe(200);
    const m = (await res.json()) as Record<string, unknown>;
    expect(m.issuer).toBe(worker.url);
    expect(m.authorization_endpoint).toBe(`${worker.url}/oauth/authorize`);
    expect(m.token_endpoint).toBe(`${worker.url}/oauth/token`);
    expect(m.registration_endpoint).toBe(`${worker.url}/oauth/register`);
    expect(m.revocation_endpoint).toBe(`${worker.url}/oauth/token`);
    expect(m.code_challenge_methods_supported).toEqual(["S256"]);
    expect(m.authorization_response_iss_parameter_supported).toBe(true);
    // Offered only when the global_fetch_strictly_public flag is set (wrangler.toml).
    expect(m.client_id_metadata_document_supported).toBe(true);
    expect(m.response_types_supported).toEqual(["code"]);
  });
});

describe("the SDK's OAuth client against /mcp", () => {
  it("registers, authorizes with PKCE S256 and the resource, and calls every tool of its project", async () => {
    const provider = new AgentProvider("Claude (test)");
    expect(await auth(provider, { serverUrl: `${worker.url}/mcp` })).toBe("REDIRECT");
    // Dynamic registration happened (RFC 7591): the server issued a client id to this public client.
    expect(provider.info?.client_id).toBeTruthy();
    const url = provider.authorizationUrl!;
    expect(url.origin + url.pathname).toBe(`${worker.url}/oauth/authorize`);
    expect(url.searchParams.get("code_challenge_method")).toBe("S256");
    expect(url.searchParams.get("resource")).toBe(`${worker.url}/mcp`);
    const { back, page } = await consent(url, project.read_key);
    // The consent page names the app, where access goes, the project; a loopback redirect is warned about.
    expect(page).toContain("Claude (test)");
    expect(page).toContain("127.0.0.1");
    expect(page).toContain("Orders MCP server");
    expect(page).toContain("data-consent-loopback");
    expect(back.searchParams.get("iss")).toBe(worker.url);
    expect(back.searchParams.get("state")).toBe(url.searchParams.get("state"));
    expect(await auth(provider, { serverUrl: `${worker.url}/mcp`, authorizationCode: back.searchParams.get("code")!, iss: worker.url })).toBe("AUTHORIZED");
    expect(provider.stored?.access_token).toBeTruthy();
    expect(provider.stored?.refresh_token).toBeTruthy();
    expect(provider.stored?.scope).toBe("metrics:read");

    const client = await mcpClient(provider);
    const { tools } = await client.listTools();
    expect(tools.length).toBeGreaterThanOrEqual(8);
    // The same figures as the read API gives the project's read key.
    const apiRes = await fetch(`${worker.url}/v1/metrics/tools`, { headers: { authorization: `Bearer ${project.read_key}` } });
    const api = (await apiRes.json()) as { tools: Row[] };
    const viaOAuth = await toolsOf(client);
    expect(viaOAuth.length).toBeGreaterThan(0);
    expect(new Map(viaOAuth.map((r) => [r.tool_name, r.calls]))).toEqual(new Map(api.tools.map((r) => [r.tool_name, r.calls])));
    for (const tool of tools) {
      const result = (await client.callTool({ name: tool.name, arguments: tool.name === "get_tool" ? { name: viaOAuth[0]!.tool_name } : tool.name === "compare_ranges" ? {} : {} })) as { isError?: boolean };
      if (tool.name !== "compare_ranges") expect(result.isError ?? false, tool.name).toBe(false);
    }
    await client.close();
  });

  it("refreshes with rotation: the new refresh token works, a replaced one no longer does", async () => {
    const provider = await connectAgent(project.read_key);
    const metadata = await discoverAuthorizationServerMetadata(worker.url);
    const first = provider.stored!;
    const second = await refreshAuthorization(worker.url, { metadata: metadata!, clientInformation: provider.info!, refreshToken: first.refresh_token!, resource: `${worker.url}/mcp` });
    expect(second.refresh_token).toBeTruthy();
    expect(second.refresh_token).not.toBe(first.refresh_token);
    expect(second.access_token).not.toBe(first.access_token);
    const third = await refreshAuthorization(worker.url, { metadata: metadata!, clientInformation: provider.info!, refreshToken: second.refresh_token!, resource: `${worker.url}/mcp` });
    expect((await rawMcp(third.access_token)).status).toBe(200);
    // `first` was replaced by `second`, and `second` has been used: `first` is dead.
    await expect(refreshAuthorization(worker.url, { metadata: metadata!, clientInformation: provider.info!, refreshToken: first.refresh_token!, resource: `${worker.url}/mcp` })).rejects.toThrow();
  });

  it("revokes a token (RFC 7009): /mcp refuses it at once", async () => {
    const provider = await connectAgent(project.read_key);
    const token = provider.stored!.access_token;
    expect((await rawMcp(token)).status).toBe(200);
    const res = await fetch(`${worker.url}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token, client_id: provider.info!.client_id }),
    });
    expect(res.status).toBe(200);
    const after = await rawMcp(token);
    expect(after.status).toBe(401);
    expect(after.headers.get("www-authenticate")).toContain("invalid_token");
  });

  it("refuses a code exchanged with the wrong PKCE verifier, and the right one still works once", async () => {
    const provider = new AgentProvider();
    expect(await auth(provider, { serverUrl: `${worker.url}/mcp` })).toBe("REDIRECT");
    const { back } = await consent(provider.authorizationUrl!, project.read_key);
    const exchange = (verifier: string) =>
      fetch(`${worker.url}/oauth/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ grant_type: "authorization_code", code: back.searchParams.get("code")!, redirect_uri: REDIRECT, client_id: provider.info!.client_id, code_verifier: verifier, resource: `${worker.url}/mcp` }),
      });
    const wrong = await exchange(provider.verifier.slice(0, -1) + (provider.verifier.endsWith("A") ? "B" : "A"));
    expect(wrong.status).toBe(400);
    expect(((await wrong.json()) as { error: string }).error).toBe("invalid_grant");
    const right = await exchange(provider.verifier);
    expect(right.status).toBe(200);
    expect((await rawMcp(((await right.json()) as { access_token: string }).access_token)).status).toBe(200);
    // A code works once.
    expect((await exchange(provider.verifier)).status).toBe(400);
  });

  it("refuses an authorization without PKCE or with the plain method", async () => {
    const provider = new AgentProvider();
    expect(await auth(provider, { serverUrl: `${worker.url}/mcp` })).toBe("REDIRECT");
    for (const change of [(u: URL) => { u.searchParams.delete("code_challenge"); u.searchParams.delete("code_challenge_method"); }, (u: URL) => u.searchParams.set("code_challenge_method", "plain")]) {
      const url = new URL(provider.authorizationUrl!);
      change(url);
      const res = await fetch(url, { redirect: "manual" });
      // The client and redirect URI are valid, so the error goes back to the app, with iss.
      expect(res.status).toBe(302);
      const back = new URL(res.headers.get("location")!);
      expect(back.searchParams.get("error")).toBe("invalid_request");
      expect(back.searchParams.get("iss")).toBe(worker.url);
    }
  });

  it("asks only for the approval when the person is already signed in to the dashboard", async () => {
    const provider = new AgentProvider("Signed-in agent");
    expect(await auth(provider, { serverUrl: `${worker.url}/mcp` })).toBe("REDIRECT");
    const session = await signedIn(other.read_key);
    const res = await fetch(provider.authorizationUrl!, { redirect: "manual", headers: { cookie: session } });
    expect(res.status).toBe(200);
    const page = await res.text();
    expect(page).toContain("data-consent-approve");
    expect(page).toContain("Someone else");
    // And a page of the dashboard's own: no connections list without a session.
    expect((await fetch(`${worker.url}/connections`, { redirect: "manual" })).status).toBe(401);
  });

  it("sends a refusal back to the app as access_denied, with iss", async () => {
    const provider = new AgentProvider();
    expect(await auth(provider, { serverUrl: `${worker.url}/mcp` })).toBe("REDIRECT");
    const { back } = await consent(provider.authorizationUrl!, project.read_key, "deny");
    expect(back.searchParams.get("error")).toBe("access_denied");
    expect(back.searchParams.get("iss")).toBe(worker.url);
    expect(back.searchParams.get("code")).toBeNull();
  });
});

describe("what a token reaches", () => {
  it("gives a token of project B nothing of project A, and A's token nothing of B", async () => {
    const forA = await connectAgent(project.read_key);
    const forB = await connectAgent(other.read_key);
    const a = await mcpClient(forA);
    const b = await mcpClient(forB);
    const aTools = await toolsOf(a);
    const bTools = await toolsOf(b);
    expect(aTools.some((r) => r.calls > 0)).toBe(true);
    expect(bTools.filter((r) => r.calls > 0)).toEqual([]);
    const one = aTools.find((r) => r.calls > 0)!.tool_name;
    const viaB = (await b.callTool({ name: "get_tool", arguments: { name: one } })) as { structuredContent?: { calls?: number }; isError?: boolean };
    expect(viaB.structuredContent?.calls ?? 0).toBe(0);
    await a.close();
    await b.close();
  });

  it("refuses an expired access token", async () => {
    const provider = await connectAgent(project.read_key);
    const token = provider.stored!.access_token;
    expect((await rawMcp(token)).status).toBe(200);
    // The token's record, as the library keeps it, with its expiry moved into the past.
    const kv = await worker.mf.getKVNamespace("OAUTH_KV");
    const [userId, grantId] = token.split(":");
    const listed = await kv.list({ prefix: `token:${userId}:${grantId}:` });
    expect(listed.keys.length).toBeGreaterThan(0);
    for (const { name } of listed.keys) {
      const record = (await kv.get(name, "json")) as { expiresAt: number };
      await kv.put(name, JSON.stringify({ ...record, expiresAt: Math.floor(Date.now() / 1000) - 1 }));
    }
    expect((await rawMcp(token)).status).toBe(401);
  });

  it("ends every token of a read key when the key is revoked, and lists, then forgets, its grants", async () => {
    const extra = await fetch(`${worker.url}/v1/admin/projects/${project.project_id}/keys`, {
      method: "POST",
      headers: { authorization: `Bearer ${worker.adminToken}`, "content-type": "application/json" },
      body: JSON.stringify({ kind: "read" }),
    });
    const { key, key_id } = (await extra.json()) as { key: string; key_id: string };
    const provider = await connectAgent(key, "Doomed agent");
    const token = provider.stored!.access_token;
    expect((await rawMcp(token)).status).toBe(200);
    const session = await signedIn(project.read_key);
    const before = await (await fetch(`${worker.url}/connections`, { headers: { cookie: session } })).text();
    expect(before).toContain("Doomed agent");
    expect(before).toContain(key_id);
    const revoked = await fetch(`${worker.url}/v1/admin/keys/${key_id}`, { method: "DELETE", headers: { authorization: `Bearer ${worker.adminToken}` } });
    expect(revoked.status).toBe(204);
    expect((await rawMcp(token)).status).toBe(401);
    const metadata = await discoverAuthorizationServerMetadata(worker.url);
    await expect(refreshAuthorization(worker.url, { metadata: metadata!, clientInformation: provider.info!, refreshToken: provider.stored!.refresh_token!, resource: `${worker.url}/mcp` })).rejects.toThrow();
    const after = await (await fetch(`${worker.url}/connections`, { headers: { cookie: session } })).text();
    expect(after).not.toContain("Doomed agent");
  });

  it("ends a project's grants when the project is deleted", async () => {
    const doomed = await createProject(worker, "Deleted soon");
    const provider = await connectAgent(doomed.read_key);
    const token = provider.stored!.access_token;
    expect((await rawMcp(token)).status).toBe(200);
    const kv = await worker.mf.getKVNamespace("OAUTH_KV");
    expect((await kv.list({ prefix: `grant:${doomed.project_id}:` })).keys.length).toBe(1);
    const res = await fetch(`${worker.url}/v1/admin/projects/${doomed.project_id}`, { method: "DELETE", headers: { authorization: `Bearer ${worker.adminToken}` } });
    expect(res.status).toBe(204);
    expect((await rawMcp(token)).status).toBe(401);
    expect((await kv.list({ prefix: `grant:${doomed.project_id}:` })).keys.length).toBe(0);
  });

  it("revokes a connection from the dashboard; another project's grant id revokes nothing", async () => {
    const provider = await connectAgent(project.read_key, "Revoked from the dashboard");
    const bystander = await connectAgent(other.read_key, "Bystander");
    const token = provider.stored!.access_token;
    const session = await signedIn(project.read_key);
    const page = await (await fetch(`${worker.url}/connections`, { headers: { cookie: session } })).text();
    const rows = page.split("<tr data-connection=").slice(1);
    const mine = rows.find((r) => r.includes("Revoked from the dashboard"));
    expect(mine).toBeDefined();
    expect(rows.some((r) => r.includes("Bystander"))).toBe(false);
    const row = /^"([^"]+)"/.exec(mine!);
    const grantOfB = bystander.stored!.access_token.split(":")[1]!;
    const revoke = (grant: string, headers: Record<string, string> = { origin: worker.url }) =>
      fetch(`${worker.url}/connections/revoke`, {
        method: "POST",
        redirect: "manual",
        headers: { ...headers, cookie: session, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ grant }),
      });
    expect((await revoke(grantOfB)).status).toBe(404);
    expect((await rawMcp(bystander.stored!.access_token)).status).toBe(200);
    // A cross-site form cannot revoke (the dashboard's same-origin rule).
    expect((await revoke(row![1]!, { origin: "https://evil.example" })).status).toBe(403);
    expect((await rawMcp(token)).status).toBe(200);
    const done = await revoke(row![1]!);
    expect(done.status).toBe(303);
    expect((await rawMcp(token)).status).toBe(401);
  });

  it("applies the Origin rule to OAuth tokens as to read keys", async () => {
    const provider = await connectAgent(project.read_key);
    const token = provider.stored!.access_token;
    expect((await rawMcp(token, { origin: worker.url })).status).toBe(200);
    for (const credential of [token, project.read_key]) {
      const res = await rawMcp(credential, { origin: "https://evil.example" });
      expect(res.status).toBe(403);
    }
    // Without a token, too: a foreign page learns nothing, not even the challenge.
    const bare = await fetch(`${worker.url}/mcp`, { method: "POST", headers: { origin: "https://evil.example" } });
    expect(bare.status).toBe(403);
    expect(bare.headers.get("www-authenticate")).toBeNull();
  });

  it("still takes the static read key as a bearer", async () => {
    const res = await rawMcp(project.read_key);
    expect(res.status).toBe(200);
  });
});

/** A dashboard session cookie for `readKey`. */
async function signedIn(readKey: string): Promise<string> {
  const res = await fetch(`${worker.url}/signin`, {
    method: "POST",
    redirect: "manual",
    headers: { origin: worker.url, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ key: readKey }),
  });
  expect(res.status).toBe(303);
  return cookiesOf(res).join("; ");
}

describe("Client ID Metadata Documents", () => {
  let listener: Server;
  let connections = 0;
  let port = 0;
  beforeAll(async () => {
    // A listener on loopback counts every connection: a CIMD fetch to it would be one.
    listener = createServer((socket) => {
      connections += 1;
      socket.destroy();
    });
    await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
    port = (listener.address() as { port: number }).port;
  });
  afterAll(() => new Promise<void>((resolve) => listener.close(() => resolve())));

  it("never fetches a client id on a loopback or private host, at the authorization page or the token endpoint", async () => {
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, "10.0.0.8", "192.168.1.20", "169.254.169.254", "172.16.0.1"]) {
      const clientId = `https://${host}/client.json`;
      const url = new URL(`${worker.url}/oauth/authorize`);
      for (const [k, v] of Object.entries({ response_type: "code", client_id: clientId, redirect_uri: REDIRECT, code_challenge: "x".repeat(43), code_challenge_method: "S256", state: "s", resource: `${worker.url}/mcp` })) url.searchParams.set(k, v);
      const res = await fetch(url, { redirect: "manual" });
      expect(res.status, host).toBe(400);
      expect(await res.text()).toContain("private or local host");
      const token = await fetch(`${worker.url}/oauth/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ grant_type: "authorization_code", code: "a:b:c", client_id: clientId, code_verifier: "v".repeat(43), redirect_uri: REDIRECT }),
      });
      expect(token.status, host).toBe(401);
      expect(((await token.json()) as { error: string }).error).toBe("invalid_client");
    }
    expect(connections).toBe(0);
  });
});
