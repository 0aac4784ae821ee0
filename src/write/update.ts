import { diffResource } from '../log/changes.ts';
import { updatedEvent, type ResourceType } from '../log/events.ts';
import type { WriteContext, Written } from './runner.ts';

/**
 * An update is decided before it writes: the service plans the resource as the update would leave
 * it, in the API's shape, and when nothing a GET shows would change it writes nothing. The answer
 * is then the resource as it is, with the same version, `updatedAt` and `ETag`, and no event.
 */
export const changesNothing = (before: object, planned: object): boolean =>
  Object.keys(diffResource(before, planned)).length === 0;

/** The answer to an update that changes nothing: the resource as it is, written by no one. */
export const unchanged = <T>(before: T): Written<T> => ({ resource: before, before, unchanged: true });

/** How every update that writes ends: with its event, made from the resource before and after. */
export function endUpdate<T extends { id: string }>(
  ctx: Pick<WriteContext, 'emit'>,
  type: ResourceType,
  before: T,
  after: T,
): Written<T> {
  ctx.emit(updatedEvent(type, before, after));
  return { resource: after, before };
}
