import { sql } from 'kysely';
import { selectIdsFrom } from '../../db/list.ts';
import type { Db } from '../../db/types.ts';
import { dayStart, nextDay } from './days.ts';
import type { OrdersQuery } from './plan.ts';

/**
 * Runs of created days: the older part of a changed-since list is read only within the runs of
 * the days its orders were created on (src/orders/read-model/list.ts olderOf), so the rows between
 * runs are never read.
 */

/** Created times from `from` to before `to`, or to `to` itself when `toIncluded`. */
export interface CreatedSpan {
  from: string;
  to: string;
  toIncluded?: boolean;
}

/** Whether a time is before the span's end. */
const beforeEnd = (time: string, { to, toIncluded }: CreatedSpan) => (toIncluded ? time <= to : time < to);

/**
 * A run of created days, [from, to), and how many of a list's orders it holds; with `days`, how
 * many each of its days holds (oldest first), by which a page passes whole days within the run.
 */
export interface CreatedRun extends CreatedSpan {
  n: number;
  days?: Array<{ day: string; n: number }>;
}

const dayNumber = (day: string) => Date.parse(dayStart(day)) / 86_400_000;

/**
 * Days joined into runs, oldest first: days at most `gapDays` apart share a run, and past `most`
 * runs the closest are joined. A list's rows between two runs are never read: one old order
 * changed today must not make a changed-since list read every order created since it. `through`
 * ends the last run at that time, included: a run is then the only bound on created_at of a read,
 * as SQLite ranges an index by one upper bound only (given `<= u` beside `< to`, it took `<= u`).
 */
export function dayRuns(
  days: string[],
  { gapDays = 7, most = 16, through }: { gapDays?: number; most?: number; through?: string } = {},
): CreatedSpan[] {
  const runs: Array<{ first: number; last: number }> = [];
  for (const day of [...new Set(days)].sort()) {
    const n = dayNumber(day);
    const run = runs.at(-1);
    if (run && n - run.last <= gapDays) run.last = n;
    else runs.push({ first: n, last: n });
  }
  while (runs.length > most) {
    let closest = 1;
    for (let i = 2; i < runs.length; i++)
      if (runs[i].first - runs[i - 1].last < runs[closest].first - runs[closest - 1].last) closest = i;
    runs[closest - 1].last = runs[closest].last;
    runs.splice(closest, 1);
  }
  const iso = (n: number) => new Date(n * 86_400_000).toISOString();
  return runs.map(({ first, last }) =>
    through !== undefined && through < iso(last + 1)
      ? { from: iso(first), to: through, toIncluded: true }
      : { from: iso(first), to: iso(last + 1) },
  );
}

const inRange = (query: OrdersQuery, { from, to, toIncluded }: CreatedSpan) =>
  query.where('created_at', '>=', from).where('created_at', toIncluded ? '<=' : '<', to);

/** How many of `query`'s orders each range holds: one statement, a count per range, each bounded by its range. */
export async function countInRanges(db: Db, query: OrdersQuery, ranges: CreatedSpan[]): Promise<number[]> {
  if (ranges.length === 0) return [];
  const counts = ranges.map(
    (range, i) => sql`(${inRange(query, range).clearSelect().select(sql`count(*)`.as('n'))}) as ${sql.ref(`n${i}`)}`,
  );
  const {
    rows: [row],
  } = await sql<Record<string, number | string>>`select ${sql.join(counts)}`.execute(db);
  return ranges.map((_, i) => Number(row[`n${i}`]));
}

/** The days (oldest first, with their counts) in their runs (dayRuns). */
export function runsOfDays(days: Array<{ day: string; n: number }>, through?: string): CreatedRun[] {
  return dayRuns(
    days.map((d) => d.day),
    { through },
  ).map((run) => {
    const inRun = days.filter(({ day }) => dayStart(day) >= run.from && beforeEnd(dayStart(day), run));
    return { ...run, n: inRun.reduce((sum, d) => sum + d.n, 0), days: inRun };
  });
}

/**
 * `take` ids of `query` after `skip`, in list order or backwards from its end, from the runs
 * (oldest first) that hold all its orders: whole runs are passed by their counts, and whole days
 * within the run the range starts in when it has them; each read is bounded by its run, so the
 * rows between runs are never read.
 */
export async function idsByRuns(
  query: OrdersQuery,
  runs: CreatedRun[],
  { backwards, skip, take }: { backwards: boolean; skip: number; take: number },
): Promise<string[]> {
  let ids: string[] = [];
  let passed = 0;
  for (const run of backwards ? runs : [...runs].reverse()) {
    if (ids.length >= take) break;
    if (passed + run.n > skip) {
      const span: CreatedSpan = { ...run };
      let within = passed;
      // Whole days before the one the range starts in, in the direction walked.
      for (const { day, n } of (backwards ? run.days : run.days && [...run.days].reverse()) ?? []) {
        if (within + n > skip) {
          if (backwards) span.from = dayStart(day);
          else if (beforeEnd(nextDay(day), span)) Object.assign(span, { to: nextDay(day), toIncluded: false });
          break;
        }
        within += n;
      }
      const found = await selectIdsFrom(inRange(query, span), backwards, Math.max(0, skip - within), take - ids.length);
      // Walking backwards, runs are read oldest first, so each run's ids go before the ids already found (newer runs').
      ids = backwards ? [...found, ...ids] : [...ids, ...found];
    }
    passed += run.n;
  }
  return ids;
}
