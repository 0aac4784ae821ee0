import { after, describe, it } from 'node:test';
import fc from 'fast-check';
import { opArb, WRITERS, writeConcurrently } from '../fulfilment/writers.ts';
import { call, cliCreateBusiness, createPgDatabase, missing, startServers, type Server } from './helpers.ts';

/**
 * The fulfilment invariant with three real instances on one PostgreSQL: 32 writers at once, their
 * requests spread over the instances (test/fulfilment/writers.ts says what is checked).
 */
describe('Fulfilment under 32 concurrent writers on three instances', () => {
  const skip = missing('postgres');
  const cleanups: Array<() => Promise<void>> = [];
  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  it('[postgres] never over-ships a line, and every shipment event matches its GET', {
    skip: skip ?? false,
    timeout: 300_000,
  }, async () => {
    const database = await createPgDatabase();
    cleanups.push(() => database.drop());
    const servers: Server[] = await startServers(3, { DATABASE_URL: database.url, RATE_LIMIT_RPS: '0' });
    cleanups.push(async () => {
      await Promise.all(servers.map((s) => s.stop()));
    });
    const tenant = await cliCreateBusiness(database.url, 'Fulfilment');
    let turn = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: WRITERS, maxLength: WRITERS * 2 }), async (ops) => {
        await writeConcurrently(
          (method, path, body) => call(servers[turn++ % servers.length].base, method, path, { as: tenant, body }),
          ops,
        );
      }),
      { numRuns: 3, endOnFailure: true },
    );
  });
});
