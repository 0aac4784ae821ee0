import type { Kysely, Migration } from 'kysely';

/**
 * Each event's W3C `traceparent`: the span that appended it, when tracing is on (decision 0047).
 * A webhook attempt for the event is made a child of it and sends its own `traceparent`, so a trace
 * runs from the request to its deliveries. Null without tracing. A column only: an earlier release
 * ignores it.
 */
export const eventTraceParents: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.alterTable('events').addColumn('trace_parent', 'text').execute();
  },
};
