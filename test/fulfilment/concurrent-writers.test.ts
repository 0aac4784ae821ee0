import { it } from 'node:test';
import fc from 'fast-check';
import { describeEachBackend } from '../helpers/context.ts';
import { opArb, WRITERS, writeConcurrently } from './writers.ts';

describeEachBackend('Fulfilment under 32 concurrent writers', (ctx) => {
  it('never over-ships a line, and every shipment event matches its GET', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: WRITERS, maxLength: WRITERS * 2 }), async (ops) => {
        const t = await ctx().createTenant();
        await writeConcurrently((method, path, body) => ctx().request(method, path, { as: t, body }), ops);
      }),
      { numRuns: 4 },
    );
  });
});
