import { sql, type RawBuilder, type SqlBool } from 'kysely';

const conditions = new Map<string, RawBuilder<SqlBool>>();

/** Live rows: soft-deleted rows keep their row with `deleted_at`. Built once per table, as hot reads use it per request. */
export function whereLive(table = ''): RawBuilder<SqlBool> {
  let condition = conditions.get(table);
  if (condition === undefined) {
    condition = sql<SqlBool>`${sql.ref(table === '' ? 'deleted_at' : `${table}.deleted_at`)} is null`;
    conditions.set(table, condition);
  }
  return condition;
}
