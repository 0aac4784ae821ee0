import type { KyselyPlugin } from 'kysely';

/**
 * A Kysely plugin that keeps the operation tree (as plain data) of each statement executed
 * through the instance it is added to (`db.withPlugin(plugin)`), to see what a read asked for.
 * Subqueries are transformed too, under ids of their own; only statements that return a result
 * are kept, each with its subqueries inside.
 */
export function recordingStatements(): { plugin: KyselyPlugin; trees: unknown[] } {
  const trees: unknown[] = [];
  const pending = new WeakMap<object, unknown>();
  return {
    trees,
    plugin: {
      transformQuery: ({ node, queryId }) => {
        pending.set(queryId, JSON.parse(JSON.stringify(node)));
        return node;
      },
      transformResult: async ({ result, queryId }) => {
        trees.push(pending.get(queryId));
        return result;
      },
    },
  };
}
