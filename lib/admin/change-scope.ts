import { CHANGEABLE_STATUSES, MessageChange, MessageFilter } from '../engine/state-table';
import { OutboxAdminFilterError } from '../errors';
import { MessageStatus } from '../message/message-status';

const { DONE, ABANDONED, MANUAL_REQUIRED } = MessageStatus;

/**
 * What a purge deletes when the filter names no status: finished rows only. MANUAL_REQUIRED rows
 * were never sent or processed; deleting one is deleting the only record of that, so a purge
 * reaches them only when the filter names MANUAL_REQUIRED.
 */
const PURGED_BY_DEFAULT = [DONE, ABANDONED];

/**
 * The filter a change on many rows runs with, or an error when it is too broad or selects nothing
 * the change could touch. An empty filter is refused: a typo must not requeue, abandon, replay or
 * purge a whole table. A purge needs a status or a time bound besides, so that it cannot reach
 * rows that are still to come. `operation` names the method, for the message.
 */
export function filterForChange(change: MessageChange, filter: MessageFilter, operation: string): MessageFilter {
  if (Object.keys(filter).length === 0) {
    throw new OutboxAdminFilterError(`${operation}() refuses an empty filter, which would reach every row of the table: give at least one field`);
  }
  if (change === 'purge' && !filter.statuses && !filter.createdAfter && !filter.createdBefore) {
    throw new OutboxAdminFilterError(`${operation}() needs a status or a time bound (createdBefore, createdAfter) besides the other fields`, 'status');
  }
  if (!filter.statuses) return change === 'purge' ? { ...filter, statuses: PURGED_BY_DEFAULT } : filter;
  const changeable = CHANGEABLE_STATUSES[change];
  if (!filter.statuses.some((status) => changeable.includes(status))) {
    throw new OutboxAdminFilterError(
      `${operation}() changes only ${changeable.join(', ')} rows, and the filter's status (${filter.statuses.join(', ')}) names none of them`,
      'status',
    );
  }
  return filter;
}

/** Whether the rows a change made may be claimed now, or released an ordering key: the worker should look. */
export function wakesWorker(change: MessageChange, filter: MessageFilter): boolean {
  return change !== 'purge' || filter.statuses!.includes(MANUAL_REQUIRED);
}
