import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  headers: Record<string, string>;
  body: string;
  event: any;
  at: number;
}

export type Behaviour = (request: Received, res: ServerResponse, count: number) => void | Promise<void>;

/** A webhook receiver on loopback: records every request; `behave` decides each answer (200 by default). */
export async function startReceiver(
  behave: Behaviour = (_r, res) => {
    res.writeHead(200).end('ok');
  },
) {
  const received: Received[] = [];
  let behaviour = behave;
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const entry: Received = {
      headers: req.headers as Record<string, string>,
      body,
      event: JSON.parse(body),
      at: Date.now(),
    };
    received.push(entry);
    await behaviour(entry, res, received.length);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    port,
    received,
    set behave(next: Behaviour) {
      behaviour = next;
    },
    /** Waits until `done(received)` holds, or fails after `ms`. */
    async until(done: (received: Received[]) => boolean, ms = 10_000): Promise<Received[]> {
      const deadline = Date.now() + ms;
      while (!done(received)) {
        if (Date.now() > deadline)
          throw new Error(
            `receiver: condition not met in ${ms} ms; ${received.length} received: ${received.map((r) => `${r.event.type}#${r.event.sequence}`).join(' ')}`,
          );
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return received;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
