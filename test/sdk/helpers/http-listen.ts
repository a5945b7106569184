// Real HTTP servers on loopback for the SDK's streamable-HTTP and SSE tests: a Node handler, or a
// fetch-style handler (the 2.x SDK's `handler.fetch`) bridged to Node's http module.
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export class HttpServers {
  private readonly servers: HttpServer[] = [];

  /** Listens on a free loopback port; returns the server's `/mcp` URL. */
  async listen(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
    const server = createServer(handler);
    this.servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  }

  /** The same for a fetch-style handler. */
  listenFetch(fetchHandler: (request: Request) => Promise<Response>): Promise<string> {
    return this.listen(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const headers = new Headers();
      for (const [name, value] of Object.entries(req.headers)) if (typeof value === "string") headers.set(name, value);
      const body = chunks.length > 0 ? Buffer.concat(chunks) : undefined;
      const response = await fetchHandler(new Request(`http://127.0.0.1${req.url}`, { method: req.method, headers, body }));
      res.writeHead(response.status, Object.fromEntries(response.headers));
      if (response.body === null) {
        res.end();
        return;
      }
      // Streamed (SSE answers of the 2.x transports), so a long-lived stream does not hang the test.
      const reader = response.body.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        res.write(Buffer.from(value));
      }
      res.end();
    });
  }

  async closeAll(): Promise<void> {
    for (const server of this.servers.splice(0)) {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  }
}
