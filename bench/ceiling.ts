import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The fastest a node:http server on this machine can answer the get-order request: the exact
 * bytes and content type, with no routing, auth, database or serialisation.
 */
export async function startCeiling(body: Buffer, contentType: string): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': contentType, 'content-length': body.length });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}
