import { sql, type RawBuilder, type SqlBool } from 'kysely';

const conditions = new Map<string, RawBuilder<SqlBool>>();

/**
 * The condition every read of live rows shares: soft-deleted rows keep their row and get
 * `deleted_at`. `table` qualifies the column in a join (`whereLive('item_variants')`). Built once
 * per table (raw builders are immutable), since hot reads use it on every request.
 */
export function whereLive(table = ''): RawBuilder<SqlBool> {
  let condition = conditions.get(table);
  if (condition === undefined) {
    condition = sql<SqlBool>`${sql.ref(table === '' ? 'deleted_at' : `${table}.deleted_at`)} is null`;
    conditions.set(table, condition);
  }
  return condition;
}
