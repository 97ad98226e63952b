import { ParseArgsConfig } from 'node:util';
import { FilteredTable } from '../admin/message-filter-validation';
import { OutboxAdminFilterError } from '../errors';
import { OptionValues } from './cli-command';
import { CliUsageError } from './cli-usage.error';

/** The filter options of `list`, `requeue`, `abandon`, `purge` and `replay`, and `--inbox`. */
export const FILTER_OPTIONS: NonNullable<ParseArgsConfig['options']> = {
  status: { type: 'string', multiple: true },
  type: { type: 'string' },
  'biz-key': { type: 'string' },
  transport: { type: 'string' },
  consumer: { type: 'string' },
  'error-contains': { type: 'string' },
  'created-after': { type: 'string' },
  'created-before': { type: 'string' },
  inbox: { type: 'boolean' },
};

export const FILTER_OPTIONS_HELP = `Filter (the options given must all match):
  --status <status>         PENDING, PROCESSING, DONE, FAILED, MANUAL_REQUIRED or ABANDONED; any of
                            several: repeat it, or separate them with commas
  --type <type>             the message type, exactly ('' in the inbox: deliveries without a type)
  --biz-key <key>           the business key, exactly
  --transport <name>        the transport (lane) an outbox message is sent by
  --consumer <name>         the consumer an inbox delivery is stored for (with --inbox)
  --error-contains <text>   last_error contains this text, literally (case counts; % and _ are plain)
  --created-after <time>    created at or after this time: 2024-03-01 (midnight UTC) or an ISO 8601
                            time with its zone, 2024-03-01T12:00:00Z
  --created-before <time>   created before this time (exclusive)
  --inbox                   the inbox table instead of the outbox`;

/** The command-line option of each field OutboxAdmin checks, for its error messages. */
const OPTION_OF_FIELD: Record<string, string> = {
  status: '--status',
  type: '--type',
  bizKey: '--biz-key',
  transport: '--transport',
  consumer: '--consumer',
  errorContains: '--error-contains',
  createdAfter: '--created-after',
  createdBefore: '--created-before',
  after: '--after',
  limit: '--limit',
  order: '--order',
  batchSize: '--batch-size',
};

/** A date, or a date and time with its zone: a time without one would be read in the host's zone. */
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2}))?$/i;

/** Which table the options select: the outbox unless `--inbox`. */
export function filteredTable(values: OptionValues): FilteredTable {
  return values.inbox === true ? 'inbox' : 'outbox';
}

/** The filter as OutboxAdmin takes it, from the options given; its checks are the admin's own. */
export function filterFields(values: OptionValues, table: FilteredTable): Record<string, unknown> {
  if (table === 'inbox' && values.transport !== undefined)
    throw new CliUsageError('--transport filters the outbox; inbox deliveries are filtered by --consumer');
  if (table === 'outbox' && values.consumer !== undefined) throw new CliUsageError('--consumer filters the inbox: add --inbox');
  const fields: Record<string, unknown> = {};
  const statuses = ((values.status as string[] | undefined) ?? []).flatMap((status) => status.split(',')).map((status) => status.trim().toUpperCase());
  if (statuses.length > 0) fields.status = statuses.length === 1 ? statuses[0] : statuses;
  const text: [string, string][] = [
    ['type', 'type'],
    ['biz-key', 'bizKey'],
    ['transport', 'transport'],
    ['consumer', 'consumer'],
    ['error-contains', 'errorContains'],
  ];
  for (const [option, field] of text) if (typeof values[option] === 'string') fields[field] = values[option];
  for (const [option, field] of [
    ['created-after', 'createdAfter'],
    ['created-before', 'createdBefore'],
  ]) {
    const value = values[option];
    if (typeof value !== 'string') continue;
    if (!ISO_INSTANT.test(value))
      throw new CliUsageError(
        `--${option} must be a date (2024-03-01, midnight UTC) or an ISO 8601 time with its zone (2024-03-01T12:00:00Z), got ${JSON.stringify(value)}`,
      );
    fields[field] = new Date(value.replace(' ', 'T'));
  }
  return fields;
}

/**
 * Runs OutboxAdmin's checks: a filter, page or batch size they refuse is a wrong command line,
 * reported with the admin's message and the option at fault.
 */
export function checkedByAdmin<T>(check: () => T): T {
  try {
    return check();
  } catch (error) {
    if (!(error instanceof OutboxAdminFilterError)) throw error;
    const option = error.field === undefined ? undefined : OPTION_OF_FIELD[error.field];
    const hint = option
      ? ` (${option})`
      : error.field === undefined
        ? `; filter options: ${Object.keys(FILTER_OPTIONS)
            .filter((name) => name !== 'inbox')
            .map((name) => `--${name}`)
            .join(', ')}`
        : '';
    throw new CliUsageError(`${error.message}${hint}`);
  }
}
