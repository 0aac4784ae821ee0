import { createServer, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Ceiling { url: string; close(): Promise<void> }

async function listen(handler: RequestListener): Promise<Ceiling> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/**
 * The fastest a node:http server on this machine can answer the get-order request: the exact
 * bytes and content type, with no routing, auth, database or serialisation.
 */
export function startCeiling(body: Buffer, contentType: string): Promise<Ceiling> {
  return listen((_req, res) => {
    res.writeHead(200, { 'content-type': contentType, 'content-length': body.length });
    res.end(body);
  });
}

/** The same for a write: a node:http server that reads the request's body and sends it back. */
export function startEchoCeiling(): Promise<Ceiling> {
  return listen((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length });
      res.end(body);
    });
  });
}
