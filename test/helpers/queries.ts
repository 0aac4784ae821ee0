import { createApp } from '../../src/app.ts';
import type { Config } from '../../src/config.ts';
import type { Tenant, TestContext } from './context.ts';

/**
 * An app whose database counts the queries it runs: `measure(url)` answers a GET once to warm
 * the auth cache, then again, and returns the second answer with its query count. The rendered
 * order cache is off unless `config` turns it on, so that the count is of loading, not of the cache.
 * `queries` are the query trees as JSON with their values; a subquery built apart is one too.
 * `queriesOf` sends one request of any method and returns its queries.
 */
export async function createQueryCounter(
  ctx: TestContext,
  as: Tenant,
  config: Partial<Config> = { responseCacheMb: 0 },
) {
  let queries: string[] = [];
  const counting = ctx.db.withPlugin({
    // The query tree as JSON names its tables, enough to tell which ones a request read.
    transformQuery: (args) => {
      queries.push(JSON.stringify(args.node));
      return args.node;
    },
    transformResult: async (args) => args.result,
  });
  // Without the webhook and import workers: their idle passes (once a second) would be counted when
  // one falls inside a measured request, as on a busy machine it does.
  const app = await createApp({
    db: counting,
    rateLimiter: null,
    config: {
      ...ctx.config,
      ...config,
      webhooks: { ...ctx.config.webhooks, workers: false },
      imports: { ...ctx.config.imports, concurrency: 0 },
    },
  });
  return {
    async measure(
      url: string,
    ): Promise<{ n: number; body: any; queries: string[]; reads: (table: string) => boolean }> {
      await app.inject({ method: 'GET', url, headers: as.headers });
      // Measured twice, the fewer counted: a background job's pass (the jobs registry runs here) can
      // fall inside one request on a busy machine, while a query a request makes shows in both.
      let res: Awaited<ReturnType<typeof app.inject>> | undefined;
      let seen: string[] = [];
      for (let i = 0; i < 2; i++) {
        queries = [];
        const answer = await app.inject({ method: 'GET', url, headers: as.headers });
        if (res === undefined || queries.length < seen.length) [res, seen] = [answer, queries];
      }
      return {
        n: seen.length,
        body: res!.json(),
        queries: seen,
        // A built query names its tables; a raw one (src/orders/shared-reads.ts) has them in its text.
        reads: (table) => seen.some((q) => q.includes(`"name":"${table}"`) || q.includes(` from ${table} `)),
      };
    },
    /** The queries of one request, sent once. */
    async queriesOf(method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object): Promise<string[]> {
      queries = [];
      await app.inject({ method, url, payload, headers: as.headers });
      return queries;
    },
    close: () => app.close(),
  };
}
