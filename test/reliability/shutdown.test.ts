import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import {
  call,
  cliCreateBusiness,
  createCatalogue,
  createPgDatabase,
  missing,
  orderBody,
  sleep,
  startServer,
} from './helpers.ts';

/**
 * A SIGTERM while the webhook worker is busy (a pass queueing, deliveries waiting on a slow
 * receiver, outcomes to record): the worker and the jobs stop before the database closes, so the
 * process exits 0 and logs no error about a closed database (issue 44).
 */
describe('shutdown with the webhook worker busy', { skip: missing('postgres') ?? false }, () => {
  it('stops the worker and the jobs before the database closes, and exits 0 without errors', async () => {
    const database = await createPgDatabase();
    // A receiver slower than the worker's wait for deliveries in flight (3 s).
    const receiver = createServer((_req, res) => setTimeout(() => res.end('ok'), 4_000).unref());
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    try {
      const tenant = await cliCreateBusiness(database.url);
      const server = await startServer({
        DATABASE_URL: database.url,
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        WEBHOOK_TIMEOUT_MS: '10000',
        LOG_LEVEL: 'info',
      });
      try {
        const catalogue = await createCatalogue(server.base, tenant);
        assert.equal(
          (await call(server.base, 'POST', '/api/v1/webhook-endpoints', { as: tenant, body: { url } })).status,
          201,
        );
        // Writes keep coming while the signal arrives: passes run, deliveries wait on the receiver.
        const writing = (async () => {
          for (let i = 0; i < 200; i++) {
            const res = await call(server.base, 'POST', `/api/v1/buyers/${catalogue.buyerId}/orders`, {
              as: tenant,
              body: orderBody(catalogue.variantId),
            }).catch(() => null);
            if (!res) return;
          }
        })();
        await sleep(1_500);
        const exit = new Promise<number | null>((resolve) => server.child.once('exit', (code) => resolve(code)));
        server.child.kill('SIGTERM');
        assert.equal(await exit, 0, server.output());
        await writing;
        assert.doesNotMatch(
          server.output(),
          /destroyed|pass failed|failed to record|shutdown failed|"level":50/,
          server.output().slice(-4000),
        );
      } finally {
        await server.kill();
      }
    } finally {
      receiver.closeAllConnections();
      receiver.close();
      await database.drop();
    }
  });
});
