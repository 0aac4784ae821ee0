import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

/**
 * The plain-SQL floor of one business's serialized write, on the benchmark's own PostgreSQL
 * database: `pgbench` clients that each lock one business row, update one of 500 orders and insert
 * one event, in a transaction (three statements, five round trips with BEGIN and COMMIT), and the
 * same as one statement (a data-modifying CTE). Scratch tables, dropped afterwards.
 */
export interface Floor {
  threeStatements: number;
  oneStatement: number;
}

const SETUP = `
  create table bench_floor_businesses (id int primary key, n bigint not null);
  create table bench_floor_orders (id int primary key, version int not null, notes text);
  create table bench_floor_events (sequence bigint primary key, order_id int not null, data text not null);
  insert into bench_floor_businesses values (1, 0);
  insert into bench_floor_orders select i, 1, null from generate_series(1, 500) i;`;
const TEARDOWN = 'drop table if exists bench_floor_businesses, bench_floor_orders, bench_floor_events';

const THREE = `\\set id random(1, 500)
begin;
update bench_floor_businesses set n = n + 1 where id = 1 returning n \\gset
update bench_floor_orders set version = version + 1, notes = 'patched' where id = :id;
insert into bench_floor_events values (:n, :id, 'order.updated');
commit;
`;
const ONE = `\\set id random(1, 500)
with b as (update bench_floor_businesses set n = n + 1 where id = 1 returning n),
  o as (update bench_floor_orders set version = version + 1, notes = 'patched' where id = :id returning id)
insert into bench_floor_events select b.n, o.id, 'order.updated' from b, o;
`;

export async function measureFloor(url: string, options: { duration: number; connections: number }): Promise<Floor> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const dir = mkdtempSync(join(tmpdir(), 'supplyline-floor-'));
  const run = (script: string) => {
    const file = join(dir, 'script.sql');
    writeFileSync(file, script);
    const out = execFileSync(
      'pgbench',
      [
        '-n',
        '-M',
        'prepared',
        '-c',
        String(options.connections),
        '-j',
        '2',
        '-T',
        String(options.duration),
        '-f',
        file,
        url,
      ],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const tps = out.match(/tps = ([\d.]+)/);
    if (!tps) throw new Error(`pgbench gave no tps:\n${out}`);
    return Math.round(Number(tps[1]));
  };
  try {
    await client.query(TEARDOWN);
    await client.query(SETUP);
    return { threeStatements: run(THREE), oneStatement: run(ONE) };
  } finally {
    await client.query(TEARDOWN);
    await client.end();
    rmSync(dir, { recursive: true, force: true });
  }
}
