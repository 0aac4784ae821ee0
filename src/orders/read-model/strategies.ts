import type { ActiveFilters, ListFilter, ListTuning, PageStrategy, TotalStrategy } from './types.ts';

export type { ActiveFilters, ListTuning, PageStrategy, TotalStrategy } from './types.ts';

/** The strategies of an order list's plan (plan.ts declares which filters each serves), in order of preference. */

export const DEFAULT_LIST_TUNING: ListTuning = Object.freeze({ shallowRows: 2_000, fewCandidates: 5_000 });

export const bySideTableMatches = (active: ActiveFilters) =>
  active.has('propertyValue') || active.has('propertyPresent');

/** What a strategy needs besides every active filter declaring it. */
type Fits = (active: ActiveFilters, candidates: number, tuning: ListTuning) => boolean;

const TOTALS: Record<TotalStrategy, Fits> = {
  countOrders: () => true,
  // Paths are counted per phase and status; values are counted by the side table's index, for all phases.
  countByProperty: (active) =>
    active.has('propertyPresent') ||
    active.has('propertyAbsent') ||
    (active.has('propertyValue') && !active.has('phase') && !active.has('status')),
  countChangedSince: (active) => active.has('changedSince'),
  countByCreatedDay: (active) => active.has('createdSince'),
  countFromSideTable: (active, candidates, tuning) => bySideTableMatches(active) && candidates <= tuning.fewCandidates,
  countChangedSplit: (active) => active.has('changedSince'),
};

const PAGES: Record<PageStrategy, Fits> = {
  // Few candidates: sorting them beats walking the list's index past orders that do not match.
  pageFromSideTable: (active, candidates, tuning) => bySideTableMatches(active) && candidates <= tuning.fewCandidates,
  pageChangedSince: (active) => active.has('changedSince'),
  pageByCreatedDay: () => true,
};

const servedByAll = (active: ActiveFilters, declared: (f: ListFilter) => readonly string[], strategy: string) =>
  [...active.values()].every((filter) => declared(filter).includes(strategy));

export function chooseTotal(
  active: ActiveFilters,
  candidates = Infinity,
  tuning = DEFAULT_LIST_TUNING,
): TotalStrategy | 'count' {
  const names = Object.keys(TOTALS) as TotalStrategy[];
  return names.find((s) => TOTALS[s](active, candidates, tuning) && servedByAll(active, (f) => f.totals, s)) ?? 'count';
}

export function choosePage(
  active: ActiveFilters,
  candidates = Infinity,
  tuning = DEFAULT_LIST_TUNING,
): PageStrategy | 'sorted' {
  const names = Object.keys(PAGES) as PageStrategy[];
  return names.find((s) => PAGES[s](active, candidates, tuning) && servedByAll(active, (f) => f.pages, s)) ?? 'sorted';
}
