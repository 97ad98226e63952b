import { MessageFilter } from '../engine/state-table';
import { MessageStatus } from '../message/message-status';

/** The parameters of one statement, each spelled by the dialect where it is added. */
export class SqlParams {
  readonly values: unknown[] = [];

  /** @param placeholder spells the n-th parameter (1-based): `$n` or `?` */
  constructor(private readonly placeholder: (n: number) => string) {}

  /** Adds `value` and returns its placeholder. */
  add(value: unknown): string {
    this.values.push(value);
    return this.placeholder(this.values.length);
  }
}

/** How one database writes what a filter compares. */
export interface FilterFlavour {
  /** Spells the n-th parameter (1-based); handed to `SqlParams` on its own, so it must not use `this`. */
  placeholder: (n: number) => string;
  /** A row id (given as decimal text) as the driver binds it for comparison with the id column. */
  id(id: string): unknown;
  /** A time parameter as it compares with the database's time columns. */
  time(params: SqlParams, instant: Date): string;
  /** `column` (never NULL here) contains `text`, character for character, case included. */
  contains(column: string, params: SqlParams, text: string): string;
}

/** The character that escapes LIKE's wildcards: not a backslash, which MySQL's string literals also treat as one. */
export const LIKE_ESCAPE = '!';

/** A LIKE pattern matching any text that contains `text` literally: its wildcards and the escape itself escaped. */
export function likeContaining(text: string): string {
  return `%${text.replace(/[!%_]/g, (char) => LIKE_ESCAPE + char)}%`;
}

/** `status IN (...)` for statuses already checked to be `MessageStatus` members (so safe to inline). */
export function statusInSql(column: string, statuses: readonly MessageStatus[]): string {
  return `${column} IN (${statuses.map((status) => `'${status}'`).join(', ')})`;
}

/**
 * The filter as conditions on the columns of alias `alias` (`c.`, or '' for none), ANDed; `1 = 1`
 * for an empty filter. Conditions on nullable columns test for a value first, so that each is
 * true or false, never NULL: a condition negated with NOT (the replay rule) stays exact.
 */
export function filterConditions(filter: MessageFilter, alias: string, params: SqlParams, flavour: FilterFlavour): string {
  const conditions: string[] = [];
  if (filter.statuses) conditions.push(statusInSql(`${alias}status`, filter.statuses));
  if (filter.type !== undefined) conditions.push(`${alias}message_type = ${params.add(filter.type)}`);
  if (filter.bizKey !== undefined) conditions.push(`(${alias}biz_key IS NOT NULL AND ${alias}biz_key = ${params.add(filter.bizKey)})`);
  if (filter.transport !== undefined) conditions.push(`${alias}transport = ${params.add(filter.transport)}`);
  if (filter.consumer !== undefined) conditions.push(`${alias}consumer = ${params.add(filter.consumer)}`);
  if (filter.errorContains !== undefined) {
    conditions.push(`(${alias}last_error IS NOT NULL AND ${flavour.contains(`${alias}last_error`, params, filter.errorContains)})`);
  }
  if (filter.createdAfter) conditions.push(`${alias}created_at >= ${flavour.time(params, filter.createdAfter)}`);
  if (filter.createdBefore) conditions.push(`${alias}created_at < ${flavour.time(params, filter.createdBefore)}`);
  return conditions.length > 0 ? conditions.join(' AND ') : '1 = 1';
}
