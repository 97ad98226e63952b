import { ListWindow } from '../engine/state-table';
import { OutboxAdminFilterError } from '../errors';
import { BatchOptions, MessagePageOptions } from './message-filter';
import { shownValue } from './message-filter-validation';

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1_000;
const DEFAULT_BATCH_SIZE = 500;
const MAX_BATCH_SIZE = 5_000;
/** A row id: a positive bigint, as decimal text. */
const ROW_ID = /^[1-9][0-9]{0,18}$/;
const MAX_ROW_ID = 2n ** 63n - 1n;

/** A listing's page as the state tables take it. */
export function checkedWindow(page: MessagePageOptions | undefined): ListWindow {
  const { after, limit = DEFAULT_LIMIT, order = 'newest', ...unknown } = options('page', page) as MessagePageOptions;
  refuseUnknown(unknown, 'a page has after, limit, order');
  if (after !== undefined && (typeof after !== 'string' || !ROW_ID.test(after) || BigInt(after) > MAX_ROW_ID)) {
    throw new OutboxAdminFilterError(`after must be a row id (the previous page's next), got ${shownValue(after)}`, 'after');
  }
  return { after: after ?? null, limit: integer('limit', limit, MAX_LIMIT), newestFirst: newestFirst(order) };
}

/** Rows per statement of a change on many rows. */
export function checkedBatchSize(batch: BatchOptions | undefined): number {
  const { batchSize = DEFAULT_BATCH_SIZE, ...unknown } = options('options', batch) as BatchOptions;
  refuseUnknown(unknown, 'the options have batchSize');
  return integer('batchSize', batchSize, MAX_BATCH_SIZE);
}

function options(name: string, value: unknown): object {
  if (value === undefined) return {};
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new OutboxAdminFilterError(`${name} must be an object, got ${shownValue(value)}`);
  return value;
}

function refuseUnknown(unknown: Record<string, unknown>, known: string): void {
  const [field] = Object.keys(unknown).filter((key) => unknown[key] !== undefined);
  if (field !== undefined) throw new OutboxAdminFilterError(`unknown field ${JSON.stringify(field)}; ${known}`, field);
}

function integer(field: string, value: unknown, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) {
    throw new OutboxAdminFilterError(`${field} must be an integer from 1 to ${max}, got ${shownValue(value)}`, field);
  }
  return value;
}

function newestFirst(order: unknown): boolean {
  if (order !== 'newest' && order !== 'oldest') throw new OutboxAdminFilterError(`order must be "newest" or "oldest", got ${shownValue(order)}`, 'order');
  return order === 'newest';
}
