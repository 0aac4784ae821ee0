import { updatedEvent, type ResourceType } from '../log/events.ts';
import type { WriteContext, Written } from './runner.ts';

/**
 * How every update ends: with its event, or, when nothing a GET of the resource shows changed, with
 * no event and the write rolled back, so that its version, `updatedAt` and `ETag` stay as they were
 * and the answer is the resource as it was.
 */
export function endUpdate<T extends { id: string }>(
  ctx: Pick<WriteContext, 'emit' | 'discard'>,
  type: ResourceType,
  before: T,
  after: T,
): Written<T> {
  const event = updatedEvent(type, before, after);
  if (Object.keys(event.changes ?? {}).length === 0) {
    ctx.discard();
    return { resource: before, before };
  }
  ctx.emit(event);
  return { resource: after, before };
}
