import { createApp } from '../../src/app.ts';
import type { Tenant, TestContext } from './context.ts';

/**
 * An app whose database counts the queries it runs: `measure(url)` answers a GET once to warm
 * the auth cache, then again, and returns the second answer with its query count.
 */
export async function createQueryCounter(ctx: TestContext, as: Tenant) {
  let queries = 0;
  const counting = ctx.db.withPlugin({
    transformQuery: (args) => { queries++; return args.node; },
    transformResult: async (args) => args.result,
  });
  const app = await createApp({ db: counting, config: ctx.config, rateLimiter: null });
  return {
    async measure(url: string): Promise<{ n: number; body: any }> {
      await app.inject({ method: 'GET', url, headers: as.headers });
      queries = 0;
      const res = await app.inject({ method: 'GET', url, headers: as.headers });
      return { n: queries, body: res.json() };
    },
    close: () => app.close(),
  };
}
