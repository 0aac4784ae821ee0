import type { Kysely, Migration } from 'kysely';
import { columnTypes } from '../dialect.ts';
import type { Dialect } from '../types.ts';

/**
 * Simulations of a sandbox (src/sandbox/runs.ts, docs/decisions/0062-sandboxes.md):
 * - `simulation_runs`: one simulated buyer at work, its schedule, counts and second thoughts to come,
 *   and the lease of the one instance (or CLI) that drives it;
 * - `simulation_orders`: the orders each run made, which its findings check.
 * New tables only: an earlier release runs beside them unchanged.
 */
export function simulationRuns(dialect: Dialect): Migration {
  const t = columnTypes(dialect);
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('simulation_runs')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('business_id', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('interval_ms', 'integer', (c) => c.notNull())
        .addColumn('total', 'integer')
        .addColumn('created', 'integer', (c) => c.notNull())
        .addColumn('changed', 'integer', (c) => c.notNull())
        .addColumn('cancelled', 'integer', (c) => c.notNull())
        .addColumn('received', 'integer', (c) => c.notNull())
        .addColumn('next_at', t.timestamp, (c) => c.notNull())
        .addColumn('pending', t.json, (c) => c.notNull())
        .addColumn('started_by', t.json, (c) => c.notNull())
        .addColumn('error', 'text')
        .addColumn('lease_owner', 'text')
        .addColumn('lease_until', t.timestamp)
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .addColumn('ended_at', t.timestamp)
        .execute();
      await db.schema
        .createIndex('simulation_runs_business_idx')
        .on('simulation_runs')
        .columns(['business_id', 'created_at'])
        .execute();
      await db.schema.createIndex('simulation_runs_state_idx').on('simulation_runs').column('state').execute();
      await db.schema
        .createTable('simulation_orders')
        .addColumn('business_id', 'text', (c) => c.notNull())
        .addColumn('run_id', 'text', (c) => c.notNull())
        .addColumn('order_id', 'text', (c) => c.notNull())
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .addPrimaryKeyConstraint('simulation_orders_pkey', ['run_id', 'order_id'])
        .execute();
      await db.schema
        .createIndex('simulation_orders_business_idx')
        .on('simulation_orders')
        .columns(['business_id', 'created_at'])
        .execute();
      await db.schema
        .createIndex('simulation_orders_run_idx')
        .on('simulation_orders')
        .columns(['run_id', 'created_at'])
        .execute();
    },
  };
}
