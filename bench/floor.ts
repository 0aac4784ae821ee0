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
  /** The PATCH's own statements sent by node-postgres from this process (`driverFloor`). */
  driver: DriverFloor;
}

/** Writes/s of the PATCH's shape through node-postgres, and this process's CPU per write. */
export interface DriverFloor {
  /** Each statement awaited before the next is sent, as the server's writes do today. */
  awaited: { writesPerSecond: number; cpuMicros: number };
  /** The same statements sent at once on a pipelining connection (node-postgres `pipeline: true`). */
  pipelined: { writesPerSecond: number; cpuMicros: number };
}

const SETUP = `
  create table bench_floor_businesses (id int primary key, n bigint not null);
  create table bench_floor_orders (id int primary key, version int not null, notes text);
  create table bench_floor_events (sequence bigint primary key, order_id int not null, data text not null);
  create table bench_floor_items (id int primary key, order_id int not null, quantity numeric not null);
  create table bench_floor_properties (order_id int, path text, value text, primary key (order_id, path));
  insert into bench_floor_businesses values (1, 0);
  insert into bench_floor_orders select i, 1, null from generate_series(1, 500) i;
  insert into bench_floor_items select i, i, 1 from generate_series(1, 500) i;
  insert into bench_floor_properties select i, 'bench.n', '0' from generate_series(1, 500) i;`;
const TEARDOWN =
  'drop table if exists bench_floor_businesses, bench_floor_orders, bench_floor_events, bench_floor_items, bench_floor_properties';

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

/** The PATCH's statements (bench/statements.ts), each named as the server names them. */
const PATCH = {
  order: 'select * from bench_floor_orders where id = $1',
  items: 'select * from bench_floor_items where order_id = $1',
  lock: 'update bench_floor_businesses set n = n + 1 where id = $1 returning n',
  update: 'update bench_floor_orders set version = version + 1, notes = $2 where id = $1 returning *',
  item: 'update bench_floor_items set quantity = $2 where id = $1 returning *',
  property: 'update bench_floor_properties set value = $3 where order_id = $1 and path = $2',
  event: 'insert into bench_floor_events select n, $2, $3 from bench_floor_businesses where id = $1',
};

/**
 * The PATCH's shape (two reads, then BEGIN, the business's lock, order, item, property, event,
 * COMMIT) through node-postgres, as the server sends it but without Fastify or Kysely: what this
 * driver allows a Node process on this machine, one statement a round trip and pipelined.
 */
async function driverFloor(url: string, options: { duration: number; connections: number }, pipeline: boolean) {
  const clients = await Promise.all(
    Array.from({ length: options.connections }, async () => {
      const client = new pg.Client({ connectionString: url, pipeline });
      await client.connect();
      return client;
    }),
  );
  const send = (client: pg.Client, name: keyof typeof PATCH, values: unknown[]) =>
    client.query({ name, text: PATCH[name], values });
  let writes = 0;
  const end = Date.now() + options.duration * 1000;
  const cpu = process.cpuUsage();
  const write = async (client: pg.Client) => {
    const id = 1 + Math.floor(Math.random() * 500);
    await send(client, 'order', [id]);
    await send(client, 'items', [id]);
    const steps: Array<() => Promise<unknown>> = [
      () => client.query('begin'),
      () => send(client, 'lock', [1]),
      () => send(client, 'update', [id, 'patched']),
      () => send(client, 'item', [id, writes % 7]),
      () => send(client, 'property', [id, 'bench.n', String(writes)]),
      () => send(client, 'event', [1, id, 'order.updated']),
      () => client.query('commit'),
    ];
    if (pipeline) await Promise.all(steps.map((step) => step()));
    else for (const step of steps) await step();
    writes++;
  };
  try {
    await Promise.all(
      clients.map(async (client) => {
        while (Date.now() < end) await write(client);
      }),
    );
    const used = process.cpuUsage(cpu);
    return {
      writesPerSecond: Math.round(writes / options.duration),
      cpuMicros: Math.round((used.user + used.system) / writes),
    };
  } finally {
    await Promise.all(clients.map((client) => client.end()));
  }
}

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
    const threeStatements = run(THREE);
    const oneStatement = run(ONE);
    const driver = {
      awaited: await driverFloor(url, options, false),
      pipelined: await driverFloor(url, options, true),
    };
    return { threeStatements, oneStatement, driver };
  } finally {
    await client.query(TEARDOWN);
    await client.end();
    rmSync(dir, { recursive: true, force: true });
  }
}
