import { sql } from 'kysely';
import { describeTables, type SchemaTable } from '../db/schema-tables.ts';
import type { Db } from '../db/types.ts';

/** Tables of the service as a whole, of no business. */
const SHARED = new Set(['instances', 'kysely_migration', 'kysely_migration_lock']);

/** Tables whose rows belong to a business through a parent row: the column naming it, and the parent's table. */
const THROUGH: Record<string, { column: string; parent: string }> = {
  import_chunks: { column: 'import_id', parent: 'imports' },
  import_results: { column: 'import_id', parent: 'imports' },
  webhook_attempts: { column: 'delivery_id', parent: 'webhook_deliveries' },
};

/** What a reset keeps: the sandbox itself, who may use it, and its counters (so sequences never repeat). */
export const KEPT_ON_RESET = new Set([
  'businesses',
  'api_keys',
  'users',
  'sessions',
  'business_counters',
  'write_clocks',
]);

export interface BusinessTable {
  name: string;
  /** Null: the table has a `business_id` column (`id` on businesses itself). */
  through: { column: string; parent: string } | null;
  /** Whether rows can be removed in batches by their `id`. */
  hasId: boolean;
}

/**
 * Every table that holds a business's rows, as the database lists them, children before the tables
 * their foreign keys name, so that deleting in this order never trips a key. A table the service
 * does not know how to attribute to a business is an error, not a table left behind.
 */
export async function businessTables(db: Db): Promise<BusinessTable[]> {
  const all = (await describeTables(db)).filter((t) => !SHARED.has(t.name));
  const unknown = all.filter((t) => !t.columns.includes('business_id') && t.name !== 'businesses' && !THROUGH[t.name]);
  if (unknown.length > 0)
    throw new Error(
      `Tables ${unknown.map((t) => t.name).join(', ')} hold no business_id: list them in src/sandbox/tables.ts`,
    );
  return childrenFirst(all).map((t) => ({
    name: t.name,
    through: THROUGH[t.name] ?? null,
    hasId: t.columns.includes('id'),
  }));
}

function childrenFirst(tables: SchemaTable[]): SchemaTable[] {
  const parentsOf = new Map(tables.map((t) => [t.name, new Set(t.references.filter((r) => r !== t.name))]));
  for (const [child, { parent }] of Object.entries(THROUGH)) parentsOf.get(child)?.add(parent);
  const ordered: SchemaTable[] = [];
  const placed = new Set<string>();
  // A table goes once no table still to place names it as a parent.
  while (ordered.length < tables.length) {
    const next = tables.find(
      (t) =>
        !placed.has(t.name) &&
        tables.every((o) => placed.has(o.name) || o === t || !parentsOf.get(o.name)!.has(t.name)),
    );
    if (!next) throw new Error('The foreign keys between tables form a cycle');
    placed.add(next.name);
    ordered.push(next);
  }
  return ordered;
}

/** Deletes up to `limit` of the business's rows of `table`; the number deleted. */
export async function deleteBusinessRows(
  db: Db,
  table: BusinessTable,
  businessId: string,
  limit: number,
): Promise<number> {
  const name = sql.table(table.name);
  const owned = table.through
    ? sql`${sql.ref(table.through.column)} in (select id from ${sql.table(table.through.parent)} where business_id = ${businessId})`
    : sql`${sql.ref(table.name === 'businesses' ? 'id' : 'business_id')} = ${businessId}`;
  const result = table.hasId
    ? await sql`delete from ${name} where id in (select id from ${name} where ${owned} limit ${limit})`.execute(db)
    : await sql`delete from ${name} where ${owned}`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}
