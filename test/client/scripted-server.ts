// A local HTTP server whose every answer a test scripts: for the client's retries, timeouts, cut
// bodies and streams, which a real server does not do on demand.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';

export type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void | Promise<void>;

export interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
  at: number;
}

export async function scriptedServer(handler: Handler) {
  const seen: Seen[] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString();
    seen.push({ method: req.method!, url: req.url!, headers: req.headers, body, at: Date.now() });
    await handler(req, res, body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    seen,
    base: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};

/** Starts a JSON answer that promises more than it sends, then drops the connection mid-body. */
export const cutBody = (res: ServerResponse, body: unknown) => {
  const text = JSON.stringify(body);
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(text.length + 100) });
  res.write(text.slice(0, Math.floor(text.length / 2)));
  setTimeout(() => res.socket?.destroy(), 10);
};
