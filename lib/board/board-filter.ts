import { FilteredTable } from '../admin/message-filter-validation';
import { CliUsageError } from '../cli/cli-usage.error';
import { FILTER_OPTIONS, filterFields } from '../cli/filter-options';
import { BoardFields, fieldOf } from './board-request';

/** The CLI's filter options, under the same names, as the fields of the board's forms and links. */
export const FILTER_FIELD_NAMES = Object.keys(FILTER_OPTIONS).filter((name) => name !== 'inbox');

/** A filter as the board's pages carry it: which table, the admin's fields, and the query that reproduces it. */
export interface BoardFilter {
  table: FilteredTable;
  /** The fields as `OutboxAdmin` takes them (it checks them). */
  fields: Record<string, unknown>;
  /** The form fields given, for links and hidden inputs: empty ones dropped. */
  query: Record<string, string | string[]>;
}

/**
 * The filter of a query or form, read as the CLI reads its options (`filterFields`), so the board
 * refuses exactly what the CLI refuses. An empty input box is no filter at all, never "equals ''".
 * A field that is neither a filter's nor one of `others` is refused, as the CLI refuses an unknown
 * option: a misspelt field in a hand-made link would otherwise widen a requeue or a purge.
 */
export function boardFilter(fields: BoardFields, others: readonly string[]): BoardFilter {
  const unknown = Object.keys(fields).find((name) => name !== 'inbox' && !FILTER_FIELD_NAMES.includes(name) && !others.includes(name));
  if (unknown !== undefined) throw new CliUsageError(`unknown field ${JSON.stringify(unknown)}; a filter has ${FILTER_FIELD_NAMES.join(', ')}`);
  const table: FilteredTable = fieldOf(fields, 'inbox') === '1' ? 'inbox' : 'outbox';
  const query: Record<string, string | string[]> = {};
  const values: Record<string, string | string[]> = {};
  for (const name of FILTER_FIELD_NAMES) {
    const raw = fields[name];
    const given = (Array.isArray(raw) ? raw : raw === undefined ? [] : [raw]).filter((value) => value.trim() !== '');
    if (given.length === 0) continue;
    query[name] = name === 'status' ? given : given[0];
    values[name] = name === 'status' ? given : given[0];
  }
  if (table === 'inbox') query.inbox = '1';
  return { table, fields: filterFields({ ...values, inbox: table === 'inbox' }, table), query };
}

/** The filter in words, for a confirmation: `status FAILED, type order.paid`; `no filter` when empty. */
export function describeFilter(filter: BoardFilter): string {
  const parts = Object.entries(filter.query)
    .filter(([name]) => name !== 'inbox')
    .map(([name, value]) => `${name} ${Array.isArray(value) ? value.join(' or ') : value}`);
  return parts.length > 0 ? parts.join(', ') : 'no filter';
}
