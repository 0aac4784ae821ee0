import { sql } from 'kysely';
import { selectIdsFrom } from '../../db/list.ts';
import type { Db } from '../../db/types.ts';
import { dayStart, nextDay } from './days.ts';
import type { OrdersQuery } from './plan.ts';

/** Runs of created days: the older part of a changed-since list is read only within them. */

export interface CreatedSpan {
  from: string;
  to: string;
  toIncluded?: boolean;
}

const beforeEnd = (time: string, { to, toIncluded }: CreatedSpan) => (toIncluded ? time <= to : time < to);

/** `days`, oldest first, let a page pass whole days within the run. */
export interface CreatedRun extends CreatedSpan {
  n: number;
  days?: Array<{ day: string; n: number }>;
}

const dayNumber = (day: string) => Date.parse(dayStart(day)) / 86_400_000;

/**
 * Past `most` runs the closest are joined. `through` ends the last run at that time, included, so
 * that the run is a read's only bound on created_at: SQLite ranges an index by one upper bound only.
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

/** One statement, a count per range. */
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

export function runsOfDays(days: Array<{ day: string; n: number }>, through?: string): CreatedRun[] {
  return dayRuns(
    days.map((d) => d.day),
    { through },
  ).map((run) => {
    const inRun = days.filter(({ day }) => dayStart(day) >= run.from && beforeEnd(dayStart(day), run));
    return { ...run, n: inRun.reduce((sum, d) => sum + d.n, 0), days: inRun };
  });
}

/** Whole runs, then whole days, are passed by their counts; each read is bounded by its run. */
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
      for (const { day, n } of (backwards ? run.days : run.days && [...run.days].reverse()) ?? []) {
        if (within + n > skip) {
          if (backwards) span.from = dayStart(day);
          else if (beforeEnd(nextDay(day), span)) Object.assign(span, { to: nextDay(day), toIncluded: false });
          break;
        }
        within += n;
      }
      const found = await selectIdsFrom(inRange(query, span), backwards, Math.max(0, skip - within), take - ids.length);
      // Backwards, runs are read oldest first, so each run's ids go before newer runs'.
      ids = backwards ? [...found, ...ids] : [...ids, ...found];
    }
    passed += run.n;
  }
  return ids;
}
