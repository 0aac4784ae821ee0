import { sql, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../types.ts';

/**
 * PostgreSQL: the two functions with which a write's commit fills in a text it took then (the SO
 * number, src/db/deferred.ts `valueAtCommit`):
 *
 * - `commit_value(setting)`: the text a take left in its transaction-local setting. It raises,
 *   and so rolls the write back, when the take set nothing (a setting once set on a pooled
 *   connection reads as '' afterwards, not as missing) or when the text is not one that goes
 *   into JSON and SQL as it is: letters, digits and `_.:-`, at most 200 of them.
 * - `deflate_stored_block(text)`: a deflate stored block (not the last) holding the text's UTF-8
 *   bytes: a header byte 0, the length and its complement, little-endian, then the bytes. A
 *   create's event data, deflated in the process around the number's placeholder, is joined around
 *   it (src/events/codec.ts `encodeDataAround`, which `storedBlock` mirrors).
 *
 * SQLite takes such texts inside the write and needs neither.
 */
export function commitValueFunctions(dialect: Dialect): Migration {
  return {
    async up(db: Kysely<any>) {
      if (dialect !== 'postgres') return;
      await sql`create or replace function commit_value(setting text) returns text language plpgsql stable as $$
        declare
          v text := current_setting(setting, true);
        begin
          if v is null or v !~ '^[A-Za-z0-9_.:-]{1,200}$' then
            raise exception 'the text % was not taken, or is not one a commit can fill in', setting;
          end if;
          return v;
        end
      $$`.execute(db);
      await sql`create or replace function deflate_stored_block(t text) returns bytea language sql immutable strict as $$
        select '\\x00'::bytea
          || set_byte(set_byte(set_byte(set_byte('\\x00000000'::bytea, 0, n % 256), 1, n / 256), 2, 255 - n % 256), 3, 255 - n / 256)
          || b
        from (select convert_to(t, 'UTF8') as b) s, lateral (select length(s.b) as n) l
        where n <= 65535
      $$`.execute(db);
    },
  };
}
