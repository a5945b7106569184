// The dashboard's page frame: header, date range and client pickers, inline CSS and script.
import { createContext, useContext, type Child, type FC } from "hono/jsx";
import { isoDate, type DateRange } from "../metrics/query.ts";
import { DAY_MS } from "../time.ts";
import { Name, shortName } from "./name.tsx";
import { DASHBOARD_CSS, PAGE_SCRIPT } from "./styles.ts";

export type PageQuery = {
  from?: string | undefined;
  to?: string | undefined;
  client?: string | undefined;
  q?: string | undefined;
  page?: number | undefined;
};

/** A dashboard link carrying the range and client along (and the search and page when given). */
export function pageHref(path: string, q: PageQuery, extra: Record<string, string> = {}): string {
  const params = new URLSearchParams(extra);
  if (q.from !== undefined) params.set("from", q.from);
  if (q.to !== undefined) params.set("to", q.to);
  if (q.client !== undefined) params.set("client", q.client);
  if (q.q !== undefined) params.set("q", q.q);
  if (q.page !== undefined && q.page > 1) params.set("page", String(q.page));
  const s = params.toString();
  return s ? `${path}?${s}` : path;
}

/**
 * A tool's page. The name goes in the query, not the path: a browser resolves `/tools/.` and
 * `/tools/%2E%2E` as dot segments, so tools named `.` and `..` could not have a page there.
 */
export function toolHref(tool: string, q: PageQuery): string {
  return pageHref("/tool", { from: q.from, to: q.to, client: q.client }, { name: tool });
}

/** Longest client name a picker option shows; the option's value is the whole name. */
const OPTION_CHARS = 48;

const Logo: FC = () => (
  <svg width="22" height="22" viewBox="0 0 24 24" aria-hidden="true">
    <rect width="24" height="24" rx="6" fill="#4f46e5" />
    <path d="M4 13h3.5l2-5 3.5 9 2.5-6 1.5 2H20" fill="none" stroke="#fff" stroke-width="2" stroke-linecap="round" stroke-linejoin="round" />
  </svg>
);

/** This request's Content-Security-Policy nonce: the one script of a page runs only with it (SPEC §3). */
export const ScriptNonce = createContext("");
/** A sentence saying the project's data is incomplete or late (routes/dashboard.tsx), or null. */
export const DataNotice = createContext<string | null>(null);
/** The request's id (app.ts, hono/request-id): an error page shows it, so a person reporting the page can quote it. */
export const RequestId = createContext("");

export const Document: FC<{ title: string; children?: Child }> = ({ title, children }) => (
  <html lang="en">
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <title>{title}</title>
      <style dangerouslySetInnerHTML={{ __html: DASHBOARD_CSS }} />
    </head>
    <body>
      {children}
      <script nonce={useContext(ScriptNonce)} dangerouslySetInnerHTML={{ __html: PAGE_SCRIPT }} />
    </body>
  </html>
);

/** The bar on every signed-in page: the brand (home), the project, the alerts link, sign-out. */
export const TopBar: FC<{ projectName: string; home?: string }> = ({ projectName, home = "/" }) => (
  <header class="top">
    <a class="brand" href={home} aria-label="MCPulse">
      <Logo /> <span class="brand-name">MCPulse</span>
    </a>
    <span class="project" data-project><Name text={projectName} /></span>
    <span class="spacer" />
    <a class="nav" href="/explore">Explore</a>
    <a class="nav" href="/alerts">Alerts</a>
    <a class="nav" href="/connections">Connections</a>
    <form method="post" action="/signout">
      <button type="submit">Sign out</button>
    </form>
  </header>
);

export type FrameProps = {
  title: string;
  heading: Child;
  projectName: string;
  asOf: string | null;
  range: DateRange;
  client: string | undefined;
  clients: string[];
  /** Path the pickers submit to (the current page). */
  path: string;
  /** Parameters the pickers keep (the tool page's `name`). */
  hidden?: Record<string, string>;
  todayMs: number;
  children?: Child;
};

/** Quick ranges ending today: today, 7, 30 and 90 days. */
const QUICK_RANGES: [string, number][] = [
  ["Today", 1],
  ["7d", 7],
  ["30d", 30],
  ["90d", 90],
];

const DataNoticeBanner: FC = () => {
  const notice = useContext(DataNotice);
  return notice ? <p class="notice" role="status" data-data-notice>{notice}</p> : null;
};

export const Frame: FC<FrameProps> = (p) => {
  const today = isoDate(p.todayMs);
  const clientOptions = p.client !== undefined && !p.clients.includes(p.client) ? [...p.clients, p.client] : p.clients;
  return (
    <Document title={p.title}>
      <TopBar projectName={p.projectName} home={pageHref("/", { from: p.range.from, to: p.range.to, client: p.client })} />
      <main>
        <DataNoticeBanner />
        <div class="toolbar">
          <h1>
            {p.heading}
            <small data-as-of={p.asOf ?? ""}>
              {p.range.from === p.range.to ? p.range.from : `${p.range.from} → ${p.range.to}`} · {p.range.days} day
              {p.range.days === 1 ? "" : "s"} · data complete to {p.asOf ? p.asOf.replace("T", " ").slice(0, 16) + " UTC" : "— (no rollup yet)"}
            </small>
          </h1>
          <nav class="quick" aria-label="Quick ranges">
            {QUICK_RANGES.map(([label, days]) => {
              const from = isoDate(p.todayMs - (days - 1) * DAY_MS);
              const on = p.range.to === today && p.range.from === from;
              return (
                <a class={on ? "on" : ""} href={pageHref(p.path, { from, to: today, client: p.client }, p.hidden)} data-quick={String(days)}>
                  {label}
                </a>
              );
            })}
          </nav>
          <form class="picker" method="get" action={p.path} id="range-picker">
            {Object.entries(p.hidden ?? {}).map(([name, value]) => <input type="hidden" name={name} value={value} />)}
            <label>
              From
              <input type="date" name="from" value={p.range.from} required />
            </label>
            <label>
              To
              <input type="date" name="to" value={p.range.to} required />
            </label>
            <label>
              Client
              <select name="client" data-autosubmit>
                <option value="" selected={p.client === undefined}>All clients</option>
                {clientOptions.map((c) => (
                  <option value={c} selected={c === p.client} title={c.length > OPTION_CHARS ? shortName(c, 1000) : undefined}>{shortName(c, OPTION_CHARS)}</option>
                ))}
              </select>
            </label>
            <button type="submit">Apply</button>
          </form>
        </div>
        {p.children}
        <footer class="foot">MCPulse Edge · names, sizes, hashes and outcomes only — never arguments or results</footer>
      </main>
    </Document>
  );
};

export const SignInPage: FC<{ error?: string | undefined; next?: string | undefined; intro?: string | undefined }> = ({ error, next, intro }) => (
  <Document title="Sign in · MCPulse">
    <div class="signin">
      <h1 style="display:flex;align-items:center;gap:10px">
        <Logo /> MCPulse
      </h1>
      {intro ? <p data-signin-intro>{intro}</p> : <p>Sign in with a read key (<span class="mono">mp_read_…</span>) to see your project's metrics.</p>}
      {error ? <div class="error" role="alert">{error}</div> : null}
      <form method="post" action="/signin">
        <input type="password" name="key" placeholder="mp_read_…" autocomplete="off" required aria-label="Read key" />
        {next && next !== "/" ? <input type="hidden" name="next" value={next} /> : null}
        <button type="submit">Sign in</button>
      </form>
    </div>
  </Document>
);

/**
 * Where a `?key=` link lands: the key's project and a button. Only the button (a same-origin form)
 * signs in, so a link planted on another site cannot switch a browser to the attacker's project. The
 * page's script drops the key from the address bar and history.
 */
export const ConfirmSignInPage: FC<{ projectName: string; signInKey: string; next: string }> = ({ projectName, signInKey, next }) => (
  <Document title="Sign in · MCPulse">
    <div class="signin" data-confirm-signin data-clean-url={next}>
      <h1 style="display:flex;align-items:center;gap:10px">
        <Logo /> MCPulse
      </h1>
      <p>
        This link signs this browser in to the project <b data-confirm-project><Name text={projectName} /></b>. Continue only if you
        expected to open that project.
      </p>
      <form method="post" action="/signin">
        <input type="hidden" name="key" value={signInKey} />
        {next !== "/" ? <input type="hidden" name="next" value={next} /> : null}
        <button type="submit">Sign in to this project</button>
      </form>
      <p style="margin:12px 0 0"><a href="/">Cancel</a></p>
    </div>
  </Document>
);

export const ErrorPage: FC<{ message: string }> = ({ message }) => (
  <Document title="MCPulse">
    <div class="signin">
      <h1>Can't show that</h1>
      <div class="error" role="alert">{message}</div>
      <p><a href="/">Back to the overview</a></p>
      <RequestIdLine />
    </div>
  </Document>
);

const RequestIdLine: FC = () => {
  const id = useContext(RequestId);
  return id ? <p class="request-id" data-request-id={id}>Request id <code>{id}</code></p> : null;
};

/**
 * The admin sign-in (SPEC §5): ADMIN_TOKEN in a form of this site. It adds the right to manage the
 * alerts of the project the browser is signed in to; it shows no project's data by itself.
 */
export const AdminSignInPage: FC<{ error?: string | undefined; next?: string | undefined }> = ({ error, next }) => (
  <Document title="Admin sign-in · MCPulse">
    <div class="signin" data-admin-signin-page>
      <h1 style="display:flex;align-items:center;gap:10px">
        <Logo /> MCPulse admin
      </h1>
      <p>Sign in with the worker's ADMIN_TOKEN to create, change and delete alert rules and destinations on the alerts page.</p>
      {error ? <div class="error" role="alert">{error}</div> : null}
      <form method="post" action="/admin/signin">
        <input type="password" name="token" placeholder="ADMIN_TOKEN" autocomplete="off" required aria-label="Admin token" />
        {next && next !== "/alerts" ? <input type="hidden" name="next" value={next} /> : null}
        <button type="submit">Sign in as admin</button>
      </form>
      <p style="margin:12px 0 0"><a href="/alerts">Back to the alerts</a></p>
    </div>
  </Document>
);
