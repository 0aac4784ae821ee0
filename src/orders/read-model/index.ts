/** The order read model's front door; README.md names its parts. */
export { listOrders, type ListOrdersOptions } from './list.ts';
export { DEFAULT_LIST_TUNING, type ListTuning } from './strategies.ts';
export { applyOrderChange, applyOrderChanges, rebuildOrderProjections, type ProjectedOrder } from './projections.ts';
export { createProjectionLoad, type ProjectionBatch, type ProjectionLoad } from './load.ts';
export { bumpCounts, countBump } from './counts.ts';
