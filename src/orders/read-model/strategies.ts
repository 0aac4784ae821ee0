import type { ActiveFilters, ListFilter, ListTuning, PageStrategy, TotalStrategy } from './types.ts';

export type { ActiveFilters, ListTuning, PageStrategy, TotalStrategy } from './types.ts';

/**
 * The strategies of an order list's plan (src/orders/read-model/plan.ts declares which filters each
 * serves): how its total and its page are read other than by `count(*)` and the sorted query, and
 * what each needs besides every active filter declaring it.
 */

export const DEFAULT_LIST_TUNING: ListTuning = Object.freeze({ shallowRows: 2_000, fewCandidates: 5_000 });

/** The filters whose matches the side table lists (a value, a present path): the candidates of the side table's strategies. */
export const bySideTableMatches = (active: ActiveFilters) =>
  active.has('propertyValue') || active.has('propertyPresent');

/**
 * What else a strategy needs, besides every active filter declaring it: the filter whose input it
 * reads, or few enough matches (`candidates`: the orders matching the property filter alone). In
 * order of preference.
 */
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
  // Changed after u: the orders created after u (planned as a createdSince list) and the older ones changed after u.
  countChangedSplit: (active) => active.has('changedSince'),
};

const PAGES: Record<PageStrategy, Fits> = {
  // A value (or a present path) that few orders have: collect the matches, test the other filters
  // on them and sort them, rather than walk the page order's index past orders that do not match.
  pageFromSideTable: (active, candidates, tuning) => bySideTableMatches(active) && candidates <= tuning.fewCandidates,
  pageChangedSince: (active) => active.has('changedSince'),
  // Unfiltered or by phase, status, createdSince and/or a path's presence or absence, with or
  // without deleted orders: the created-day counts (of orders, and of orders with each path).
  pageByCreatedDay: () => true,
};

const servedByAll = (active: ActiveFilters, declared: (f: ListFilter) => readonly string[], strategy: string) =>
  [...active.values()].every((filter) => declared(filter).includes(strategy));

/** How the total is read: a maintained count every active filter declares, else the exact `count(*)`. */
export function chooseTotal(
  active: ActiveFilters,
  candidates = Infinity,
  tuning = DEFAULT_LIST_TUNING,
): TotalStrategy | 'count' {
  const names = Object.keys(TOTALS) as TotalStrategy[];
  return names.find((s) => TOTALS[s](active, candidates, tuning) && servedByAll(active, (f) => f.totals, s)) ?? 'count';
}

/** How the page's ids are read: a strategy every active filter declares, else the sorted query. */
export function choosePage(
  active: ActiveFilters,
  candidates = Infinity,
  tuning = DEFAULT_LIST_TUNING,
): PageStrategy | 'sorted' {
  const names = Object.keys(PAGES) as PageStrategy[];
  return names.find((s) => PAGES[s](active, candidates, tuning) && servedByAll(active, (f) => f.pages, s)) ?? 'sorted';
}
