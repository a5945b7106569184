// OAuth 2.1 for /mcp in workerd (SPEC §9): the KV binding and the compatibility flag as wrangler.toml
// gives them, where OAuth is offered (https, or http on loopback) and where not, the private-host
// rule for client metadata documents at its edges, and the read API untouched by the edge.
import { env } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { isPrivateHostname, privateClientIdHost } from "../../src/worker/oauth/authorization-server.ts";
import { createProject } from "./helpers/projects.ts";

describe("the OAuth bindings", () => {
  it("has the grants' KV namespace and the public-only fetch flag", async () => {
    expect(env.OAUTH_KV).toBeDefined();
    await env.OAUTH_KV.put("probe", "1");
    expect(await env.OAUTH_KV.get("probe")).toBe("1");
    const metadata = await exports.default.fetch("https://mcpulse.example/.well-known/oauth-authorization-server");
    expect(metadata.status).toBe(200);
    // The library offers CIMD only when global_fetch_strictly_public is set.
    expect(((await metadata.json()) as { client_id_metadata_document_supported?: boolean }).client_id_metadata_document_supported).toBe(true);
  });
});

describe("where OAuth is offered", () => {
  it("on https and on loopback http, with resource = that origin + /mcp", async () => {
    for (const origin of ["https://mcpulse.example", "https://other.example:8443", "http://localhost:8787", "http://127.0.0.1:8787"]) {
      const res = await exports.default.fetch(`${origin}/.well-known/oauth-protected-resource/mcp`);
      expect(res.status, origin).toBe(200);
      expect(((await res.json()) as { resource: string }).resource).toBe(`${origin}/mcp`);
    }
  });

  it("not on plain http to a public host: no metadata, and /mcp takes only the read key", async () => {
    const metadata = await exports.default.fetch("http://worker/.well-known/oauth-protected-resource/mcp");
    expect(metadata.status).toBe(404);
    const token = await exports.default.fetch("http://worker/oauth/token", { method: "POST" });
    expect(token.status).toBe(404);
    const page = await exports.default.fetch("http://worker/oauth/authorize?client_id=x");
    expect(page.status).toBe(400);
    expect(await page.text()).toContain("https only");
    const project = await createProject("oauth-http");
    const mcp = await exports.default.fetch("http://worker/mcp", {
      method: "POST",
      headers: { authorization: `Bearer ${project.read_key}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } } }),
    });
    expect(mcp.status).toBe(200);
  });

  it("answers /mcp's challenge for a bad OAuth-shaped token from the library, naming the metadata", async () => {
    const res = await exports.default.fetch("https://mcpulse.example/mcp", { method: "POST", headers: { authorization: "Bearer prj_x:grant:secret" } });
    expect(res.status).toBe(401);
    const challenge = res.headers.get("www-authenticate")!;
    expect(challenge).toContain('error="invalid_token"');
    expect(challenge).toContain('resource_metadata="https://mcpulse.example/.well-known/oauth-protected-resource/mcp"');
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
  });
});

describe("client metadata documents on private hosts", () => {
  it("refuses loopback, private, link-local, CGNAT, unique-local and local names; takes public hosts", () => {
    const privateHosts = [
      "127.0.0.1", "127.255.255.254", "10.0.0.1", "10.255.255.255", "172.16.0.1", "172.31.255.255", "192.168.0.1",
      "169.254.169.254", "100.64.0.1", "100.127.255.255", "0.0.0.0", "224.0.0.1", "[::1]", "[::]", "[fc00::1]", "[fd12::1]",
      "[fe80::1]", "[::ffff:127.0.0.1]", "localhost", "app.localhost", "printer.local", "metadata.google.internal", "router.home.arpa", "intranet",
    ];
    for (const host of privateHosts) expect(isPrivateHostname(new URL(`https://${host}/`).hostname), host).toBe(true);
    // Just outside each private range.
    const publicHosts = ["172.15.255.255", "172.32.0.1", "100.63.255.255", "100.128.0.1", "169.253.0.1", "192.167.1.1", "11.0.0.1", "223.255.255.255", "[2606:4700::1]", "claude.ai", "chatgpt.com"];
    for (const host of publicHosts) expect(isPrivateHostname(new URL(`https://${host}/`).hostname), host).toBe(false);
  });

  it("looks only at https client ids (a registered client's id is not a URL)", () => {
    expect(privateClientIdHost("https://127.0.0.1/client.json")).toBe(true);
    expect(privateClientIdHost("https://claude.ai/oauth/client.json")).toBe(false);
    expect(privateClientIdHost("h4FKWbSGMVHdmMRS")).toBe(false);
    expect(privateClientIdHost("http://127.0.0.1/client.json")).toBe(false);
  });
});
