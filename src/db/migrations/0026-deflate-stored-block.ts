import { sql, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../types.ts';

/**
 * PostgreSQL: `deflate_stored_block(text)`, a deflate stored block (not the last) holding the
 * text's UTF-8 bytes: a header byte 0, the length and its complement, little-endian, then the
 * bytes. A create's SO number is taken as it commits, and its event's data, deflated in the
 * process around the number's placeholder, is joined around this block there (src/events/codec.ts
 * `encodeDataAround`, which `storedBlock` mirrors). SQLite takes the number inside the write.
 */
export function deflateStoredBlockFunction(dialect: Dialect): Migration {
  return {
    async up(db: Kysely<any>) {
      if (dialect !== 'postgres') return;
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
