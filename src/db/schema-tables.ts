import { sql } from 'kysely';
import { dialectOf } from './dialect.ts';
import type { Db } from './types.ts';

/** A table of the schema as the database describes it: its columns and the tables its foreign keys name. */
export interface SchemaTable {
  name: string;
  columns: string[];
  references: string[];
}

/** Every table of the database (of the current schema on PostgreSQL), by name. */
export async function describeTables(db: Db): Promise<SchemaTable[]> {
  const tables = new Map<string, SchemaTable>();
  const table = (name: string) => {
    let found = tables.get(name);
    if (!found) tables.set(name, (found = { name, columns: [], references: [] }));
    return found;
  };
  if (dialectOf(db) === 'postgres') {
    const columns = await sql<{ table: string; column: string }>`select table_name as table, column_name as column
      from information_schema.columns where table_schema = current_schema() order by table_name, ordinal_position`.execute(
      db,
    );
    for (const r of columns.rows) table(r.table).columns.push(r.column);
    const keys = await sql<{ table: string; parent: string }>`select c.relname as table, p.relname as parent
      from pg_constraint k join pg_class c on c.oid = k.conrelid join pg_class p on p.oid = k.confrelid
      join pg_namespace n on n.oid = c.relnamespace
      where k.contype = 'f' and n.nspname = current_schema()`.execute(db);
    for (const r of keys.rows) table(r.table).references.push(r.parent);
  } else {
    const columns = await sql<{ table: string; column: string }>`select m.name as "table", p.name as "column"
      from sqlite_master m join pragma_table_info(m.name) p
      where m.type = 'table' and m.name not like 'sqlite_%' order by m.name, p.cid`.execute(db);
    for (const r of columns.rows) table(r.table).columns.push(r.column);
    const keys = await sql<{ table: string; parent: string }>`select m.name as "table", f."table" as parent
      from sqlite_master m join pragma_foreign_key_list(m.name) f where m.type = 'table'`.execute(db);
    for (const r of keys.rows) table(r.table).references.push(r.parent);
  }
  return [...tables.values()].sort((a, b) => a.name.localeCompare(b.name));
}
