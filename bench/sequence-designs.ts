/**
 * The event sequence's candidate designs on PostgreSQL, measured side by side (issue 17), run by hand:
 *
 *   npx tsx bench/sequence-designs.ts [--seconds 5] [--repeat 2] [--admin postgres://postgres@127.0.0.1:5432/postgres]
 *
 * It creates a database of its own (`supplyline_seqbench_*`, dropped at the end) and, for each design,
 * runs writers that each commit "a write": one ~1 kB row of work plus one ~700-byte event, as the
 * service's writes do. Writers: 1, 8 and 32 at once, all in ONE business, or each write in one of
 * 1,000 businesses (every 50th in business 0). Meanwhile one reader follows business 0's feed in a loop (pages of 100) and
 * notes, for each event, the time from its writer's COMMIT answering to the reader first seeing it.
 * Designs:
 *
 * - `counter`: the service's design. A per-business counter row (`insert .. on conflict do update
 *   .. returning`), taken last in the write's transaction; the feed reads up to the committed counter.
 * - `xmin`: a global identity, and the writing transaction's id (`pg_current_xact_id()`) in the row;
 *   the feed shows only events whose transaction is older than the oldest one still running
 *   (`pg_snapshot_xmin(pg_current_snapshot())`), in (xid, id) order, so a reader never passes an
 *   event that commits later. No per-business numbering (a consumer cannot count what it missed).
 * - `sequencer`: events are written without a sequence; one background loop (an advisory lock
 *   makes it one in a cluster) numbers the committed ones per business every 10 ms. Writers never
 *   wait on each other; each event is written twice and the feed lags by the loop.
 *
 * Results: a table on stdout and bench/results/sequence-designs-<time>.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import pg from 'pg';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    repeat: { type: 'string', default: '2' },
    admin: { type: 'string', default: process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres' },
  },
});
const SECONDS = Number(values.seconds);
const REPEAT = Number(values.repeat);
const BUSINESSES = 1000;
const WORK = 'x'.repeat(1000);
const EVENT = randomBytes(700);

type Design = 'counter' | 'xmin' | 'sequencer';
const DESIGNS: Design[] = ['counter', 'xmin', 'sequencer'];

const SCHEMA = `
  create table work (id bigint generated always as identity primary key, business_id text not null, payload text not null);
  create table counters (business_id text primary key, value bigint not null);
  create table events_counter (business_id text not null, sequence bigint not null, data bytea not null, primary key (business_id, sequence));
  create table events_xmin (id bigint generated always as identity, business_id text not null,
    xid xid8 not null default pg_current_xact_id(), data bytea not null);
  create index events_xmin_feed on events_xmin (business_id, xid, id);
  create table events_seq (id bigint generated always as identity primary key, business_id text not null, sequence bigint, data bytea not null);
  create unique index events_seq_feed on events_seq (business_id, sequence);
  create index events_seq_pending on events_seq (id) where sequence is null;
  create table seq_counters (business_id text primary key, value bigint not null);
`;

/** One write of one business: its work, then its event as the design appends it. Returns the event's key. */
async function write(c: pg.PoolClient, design: Design, business: string): Promise<string> {
  await c.query('begin');
  try {
    await c.query('insert into work (business_id, payload) values ($1, $2)', [business, WORK]);
    let key: string;
    if (design === 'counter') {
      const {
        rows: [r],
      } = await c.query(
        `insert into counters (business_id, value) values ($1, 1)
        on conflict (business_id) do update set value = counters.value + 1 returning value`,
        [business],
      );
      await c.query('insert into events_counter (business_id, sequence, data) values ($1, $2, $3)', [
        business,
        r.value,
        EVENT,
      ]);
      key = `${business}/${r.value}`;
    } else if (design === 'xmin') {
      const {
        rows: [r],
      } = await c.query('insert into events_xmin (business_id, data) values ($1, $2) returning id', [business, EVENT]);
      key = `${business}/${r.id}`;
    } else {
      const {
        rows: [r],
      } = await c.query('insert into events_seq (business_id, data) values ($1, $2) returning id', [business, EVENT]);
      key = `${business}/${r.id}`;
    }
    await c.query('commit');
    return key;
  } catch (error) {
    await c.query('rollback');
    throw error;
  }
}

/** One feed page of business `b` after the cursor; returns the keys seen and the new cursor. */
async function readPage(
  c: pg.PoolClient,
  design: Design,
  b: string,
  cursor: string[],
): Promise<{ keys: string[]; cursor: string[] }> {
  if (design === 'counter') {
    const after = cursor[0] ?? '0';
    const {
      rows: [bound],
    } = await c.query('select value from counters where business_id = $1', [b]);
    if (!bound) return { keys: [], cursor };
    const { rows } = await c.query(
      `select sequence, data from events_counter where business_id = $1 and sequence > $2
      and sequence <= $3 order by sequence limit 100`,
      [b, after, bound.value],
    );
    return { keys: rows.map((r) => `${b}/${r.sequence}`), cursor: rows.length ? [rows.at(-1).sequence] : cursor };
  }
  if (design === 'xmin') {
    const [xid, id] = cursor.length ? cursor : ['0', '0'];
    const { rows } = await c.query(
      `select xid::text, id, data from events_xmin where business_id = $1
      and (xid, id) > ($2::text::xid8, $3::bigint) and xid < pg_snapshot_xmin(pg_current_snapshot())
      order by xid, id limit 100`,
      [b, xid, id],
    );
    return { keys: rows.map((r) => `${b}/${r.id}`), cursor: rows.length ? [rows.at(-1).xid, rows.at(-1).id] : cursor };
  }
  const after = cursor[0] ?? '0';
  const { rows } = await c.query(
    `select id, sequence, data from events_seq where business_id = $1 and sequence > $2
    order by sequence limit 100`,
    [b, after],
  );
  return { keys: rows.map((r) => `${b}/${r.id}`), cursor: rows.length ? [rows.at(-1).sequence] : cursor };
}

/** The sequencer's round: numbers up to 5,000 committed, unnumbered events, per business, in id order. */
const SEQUENCE_ROUND = `with pending as (
    select id, business_id, row_number() over (partition by business_id order by id) as rn,
      count(*) over (partition by business_id) as n
    from (select id, business_id from events_seq where sequence is null order by id limit 5000) p),
  bumped as (
    insert into seq_counters (business_id, value) select business_id, max(n) from pending group by business_id
    on conflict (business_id) do update set value = seq_counters.value + excluded.value returning business_id, value)
  update events_seq e set sequence = b.value - p.n + p.rn from pending p join bumped b using (business_id) where e.id = p.id`;

function startSequencer(pool: pg.Pool): () => Promise<void> {
  let running = true;
  const done = (async () => {
    const c = await pool.connect();
    try {
      await c.query('select pg_advisory_lock(17)');
      while (running) {
        await c.query(SEQUENCE_ROUND);
        await new Promise((r) => setTimeout(r, 10));
      }
      await c.query(SEQUENCE_ROUND);
      await c.query('select pg_advisory_unlock(17)');
    } finally {
      c.release();
    }
  })();
  return async () => {
    running = false;
    await done;
  };
}

const pct = (sorted: number[], p: number) =>
  sorted.length ? Math.round(sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] * 10) / 10 : NaN;

interface Result {
  design: Design;
  writers: number;
  spread: 'one' | 'many';
  writesPerSecond: number;
  errors: number;
  seen: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
}

async function run(url: string, design: Design, writers: number, spread: 'one' | 'many'): Promise<Result> {
  const pool = new pg.Pool({ connectionString: url, max: writers + 3 });
  await pool.query('truncate work, counters, events_counter, events_xmin, events_seq, seq_counters');
  const stopSequencer = design === 'sequencer' ? startSequencer(pool) : undefined;
  const committed = new Map<string, number>();
  let writes = 0;
  let errors = 0;
  const end = performance.now() + SECONDS * 1000;
  const writer = async (w: number) => {
    const c = await pool.connect();
    try {
      for (let i = 0; performance.now() < end; i++) {
        // Spread: each write in one of 1,000 businesses, every 50th in business 0 (which the reader follows).
        const business =
          spread === 'one' || i % 50 === w % 50 ? 'b0' : `b${1 + ((w * 7919 + i * 104729) % (BUSINESSES - 1))}`;
        try {
          const key = await write(c, design, business);
          writes++;
          if (business === 'b0') committed.set(key, performance.now());
        } catch {
          errors++;
        }
      }
    } finally {
      c.release();
    }
  };
  const latencies: number[] = [];
  let seen = 0;
  const reader = async () => {
    const c = await pool.connect();
    let cursor: string[] = [];
    try {
      // Reads until the writers stop and two seconds more (the sequencer's and xmin's stragglers).
      while (performance.now() < end + 2000) {
        const page = await readPage(c, design, 'b0', cursor);
        const now = performance.now();
        cursor = page.cursor;
        for (const key of page.keys) {
          seen++;
          const at = committed.get(key);
          // Seen before its writer heard COMMIT's answer: 0.
          latencies.push(at === undefined ? 0 : Math.max(0, now - at));
        }
        if (page.keys.length === 0) await new Promise((r) => setImmediate(r));
      }
    } finally {
      c.release();
    }
  };
  await Promise.all([reader(), ...Array.from({ length: writers }, (_, w) => writer(w))]);
  await stopSequencer?.();
  await pool.end();
  latencies.sort((a, b) => a - b);
  return {
    design,
    writers,
    spread,
    writesPerSecond: Math.round(writes / SECONDS),
    errors,
    seen,
    latencyP50Ms: pct(latencies, 0.5),
    latencyP99Ms: pct(latencies, 0.99),
  };
}

/** Checks the counter design's promise on what it wrote last: business 0's sequences are 1..N. */
async function checkContiguous(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const {
    rows: [r],
  } = await client.query(
    `select count(*)::int as n, coalesce(max(sequence), 0)::int as top from events_counter where business_id = 'b0'`,
  );
  await client.end();
  if (r.n !== r.top) throw new Error(`counter design: ${r.n} events but top sequence ${r.top}`);
}

const admin = values.admin!;
const name = `supplyline_seqbench_${randomBytes(4).toString('hex')}`;
const adminQuery = async (statement: string) => {
  const c = new pg.Client({ connectionString: admin });
  await c.connect();
  try {
    await c.query(statement);
  } finally {
    await c.end();
  }
};
await adminQuery(`create database ${name}`);
const url = new URL(admin);
url.pathname = `/${name}`;
const results: Result[] = [];
try {
  const setup = new pg.Client({ connectionString: url.toString() });
  await setup.connect();
  await setup.query(SCHEMA);
  await setup.end();
  for (let round = 0; round < REPEAT; round++) {
    for (const spread of ['one', 'many'] as const) {
      for (const writers of [1, 8, 32]) {
        // Alternate the designs' order between rounds, so that drift on a shared machine spreads evenly.
        const order = round % 2 === 0 ? DESIGNS : [...DESIGNS].reverse();
        for (const design of order) {
          const r = await run(url.toString(), design, writers, spread);
          if (design === 'counter') await checkContiguous(url.toString());
          results.push(r);
          console.error(
            `${design.padEnd(9)} ${String(writers).padStart(2)} writers, ${spread} business${spread === 'many' ? 'es' : ''}: ` +
              `${r.writesPerSecond} writes/s, feed latency p50 ${r.latencyP50Ms} ms p99 ${r.latencyP99Ms} ms (${r.seen} seen, ${r.errors} errors)`,
          );
        }
      }
    }
  }
} finally {
  await adminQuery(`drop database if exists ${name} with (force)`);
}

// Medians over the rounds, one row per design and case.
const lines = ['design     writers  businesses  writes/s  feed p50 ms  feed p99 ms'];
const summary: Array<Omit<Result, 'seen' | 'errors'>> = [];
for (const spread of ['one', 'many'] as const) {
  for (const writers of [1, 8, 32]) {
    for (const design of DESIGNS) {
      const runs = results.filter((r) => r.design === design && r.writers === writers && r.spread === spread);
      const med = (f: (r: Result) => number) => {
        const v = runs.map(f).sort((a, b) => a - b);
        return v[Math.floor((v.length - 1) / 2)];
      };
      const row = {
        design,
        writers,
        spread,
        writesPerSecond: med((r) => r.writesPerSecond),
        latencyP50Ms: med((r) => r.latencyP50Ms),
        latencyP99Ms: med((r) => r.latencyP99Ms),
      };
      summary.push(row);
      lines.push(
        `${design.padEnd(10)} ${String(writers).padStart(7)}  ${(spread === 'one' ? '1' : String(BUSINESSES)).padStart(10)}  ${String(row.writesPerSecond).padStart(8)}  ${String(row.latencyP50Ms).padStart(11)}  ${String(row.latencyP99Ms).padStart(11)}`,
      );
    }
  }
}
console.log(lines.join('\n'));
mkdirSync('bench/results', { recursive: true });
const file = `bench/results/sequence-designs-${new Date().toISOString().replace(/[:.]/g, '-')}.json`;
writeFileSync(
  file,
  JSON.stringify(
    {
      seconds: SECONDS,
      repeat: REPEAT,
      businesses: BUSINESSES,
      summary,
      results,
      machine: { cpus: cpus().length, model: cpus()[0]?.model, loadAverage: loadavg() },
    },
    null,
    2,
  ),
);
console.log(`Saved ${file}`);
