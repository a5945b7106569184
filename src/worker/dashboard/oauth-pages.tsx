// The pages of OAuth for /mcp (SPEC §9): the consent page an agent's app sends a person to, and the
// list of a project's connections with "revoke". Everything shown of a client came from the client
// (its registration or its metadata document) and is rendered as text, never as markup.
import type { FC } from "hono/jsx";
import { Document, TopBar } from "./layout.tsx";
import { Name } from "./name.tsx";

export type ConsentView = {
  projectName: string;
  clientName: string;
  /** A CIMD client's domain (its client id is a URL there); absent for a registered client, whose name is self-asserted. */
  clientDomain?: string | undefined;
  redirectHost: string;
  redirectIsLoopback: boolean;
  handle: string;
  /** This page's own address, to come back to after signing in with another project's key. */
  self: string;
};

export const ConsentPage: FC<ConsentView> = (p) => (
  <Document title="Connect an app · MCPulse">
    <div class="signin" data-consent>
      <h1>Connect an app to your metrics</h1>
      <p>
        <b data-consent-client><Name text={p.clientName} /></b>{" "}
        {p.clientDomain ? (
          <>
            (published by <b data-consent-domain><Name text={p.clientDomain} /></b>)
          </>
        ) : (
          <>(this app registered itself: its name is not verified)</>
        )}{" "}
        asks to read the metrics of the project <b data-consent-project><Name text={p.projectName} /></b>, read-only
        (<span class="mono">metrics:read</span>). Access is sent to <b data-consent-redirect><Name text={p.redirectHost} /></b>.
      </p>
      {p.redirectIsLoopback ? (
        <div class="error" role="alert" data-consent-loopback>
          This sends access to an app on your computer. Continue only if you just started connecting from it.
        </div>
      ) : null}
      <form method="post" action="/oauth/authorize">
        <input type="hidden" name="handle" value={p.handle} />
        <button type="submit" name="decision" value="approve" data-consent-approve>Allow read-only access</button>
        <p style="margin:10px 0 0"></p>
        <button type="submit" name="decision" value="deny" data-consent-deny>Deny</button>
      </form>
      <p style="margin:16px 0 0">Another project? Sign in with its read key:</p>
      <form method="post" action="/signin">
        <input type="password" name="key" placeholder="mp_read_…" autocomplete="off" required aria-label="Read key" />
        <input type="hidden" name="next" value={p.self} />
        <button type="submit">Use this key</button>
      </form>
    </div>
  </Document>
);

export type ConnectionRow = { grantId: string; clientName: string; clientId: string; createdAt: string; keyId: string };

export const ConnectionsPage: FC<{ projectName: string; rows: ConnectionRow[]; revoked: boolean }> = ({ projectName, rows, revoked }) => (
  <Document title="Connections · MCPulse">
    <TopBar projectName={projectName} />
    <main>
      <h1>Connections</h1>
      <p>
        Apps connected to this project's metrics over OAuth (Claude, ChatGPT and other MCP clients), read-only. Revoking one ends
        its access at once; so does revoking the read key that approved it.
      </p>
      {revoked ? <p class="notice" role="status" data-connection-revoked>The connection was revoked.</p> : null}
      {rows.length === 0 ? (
        <p data-no-connections>No app is connected.</p>
      ) : (
        <table data-connections>
          <thead>
            <tr>
              <th>App</th>
              <th>Connected</th>
              <th>Approved with</th>
              <th></th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr data-connection={r.grantId}>
                <td><Name text={r.clientName} /><br /><small class="mono"><Name text={r.clientId} /></small></td>
                <td>{r.createdAt}</td>
                <td class="mono">{r.keyId}</td>
                <td>
                  <form method="post" action="/connections/revoke">
                    <input type="hidden" name="grant" value={r.grantId} />
                    <button type="submit" data-revoke-connection>Revoke</button>
                  </form>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <p>Last use is not recorded. An access token lives an hour; a connection lasts 30 days from its approval.</p>
    </main>
  </Document>
);
