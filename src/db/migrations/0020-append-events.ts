import { sql, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../types.ts';

/**
 * PostgreSQL: `append_events`, a write's events appended in one call (src/events/log.ts). Taking
 * sequence numbers locks the business's event counter until commit, and every statement sent
 * after that while the write's transaction waited on the server's event loop kept the next writer
 * of the business waiting: under 16 connections of PATCHes, nearly every busy connection was
 * waiting on that lock. In one call the lock is held for the call and the commit only. Each
 * statement of a plpgsql function takes its own snapshot, so the insert, which reads each
 * resource's last version, sees the events committed by the writer it waited for. SQLite has one
 * writer and no such functions; there the same steps are separate statements.
 */
export function appendEventsFunction(dialect: Dialect): Migration {
  return {
    async up(db: Kysely<any>) {
      if (dialect !== 'postgres') return;
      await sql`create function append_events(
          p_business text, p_ids text[], p_types text[], p_resource_types text[], p_resource_ids text[], p_data bytea[],
          p_occurred_at timestamptz, p_actor jsonb, p_request_id text, p_idempotency_key text, p_channel text)
        returns bigint language plpgsql as $$
        declare
          n integer := cardinality(p_ids);
          last_sequence bigint;
        begin
          insert into business_counters (business_id, name, value) values (p_business, 'event', n)
            on conflict (business_id, name) do update set value = business_counters.value + excluded.value
            returning value into last_sequence;
          -- A resource's version: one more than its last event's; events of one resource in this
          -- call count on from there in their order.
          insert into events (business_id, sequence, id, type, resource_type, resource_id, resource_version,
              occurred_at, actor, request_id, idempotency_key, data)
            select p_business, last_sequence - n + e.ord, e.id, e.type, e.resource_type, e.resource_id,
              coalesce((select p.resource_version from events p
                where p.business_id = p_business and p.resource_type = e.resource_type and p.resource_id = e.resource_id
                order by p.sequence desc limit 1), 0)
                + row_number() over (partition by e.resource_type, e.resource_id order by e.ord),
              p_occurred_at, p_actor, p_request_id, p_idempotency_key, e.data
            from unnest(p_ids, p_types, p_resource_types, p_resource_ids, p_data) with ordinality
              as e(id, type, resource_type, resource_id, data, ord);
          perform pg_notify(p_channel, p_business);
          return last_sequence;
        end
        $$`.execute(db);
    },
  };
}
