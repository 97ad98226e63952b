import { ParkedKey } from '../engine/message-views';
import { COMMON_OPTIONS_HELP, integerOption } from './cli-arguments';
import { CliCommand, ExitCode } from './cli-command';
import { withConnection } from './cli-connection';
import { counted, printJson } from './cli-format';
import { CliUsageError } from './cli-usage.error';
import { filteredTable } from './filter-options';
import { requireReadyTable } from './table-schema-state';
import { printTable } from './table-printer';

/** The keys listed unless `--limit` says otherwise, and the most it may ask for. */
const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1_000;
/** The longest `last_error` a listed key shows; `--json` has all of it. */
const SHOWN_ERROR_CHARACTERS = 80;

/** `nestjs-outbox parked`: `OutboxAdmin.parkedKeys` (or `parkedInboxKeys`) from the command line. */
export const parkedCommand: CliCommand = {
  name: 'parked',
  summary: 'list the ordering keys held back by a MANUAL_REQUIRED message',
  options: { inbox: { type: 'boolean' }, limit: { type: 'string' } },
  help: `Usage: nestjs-outbox parked -d <data-source file> [--inbox] [--limit n] [--json]

Lists the ordering keys whose first unfinished message is MANUAL_REQUIRED, as
OutboxAdmin.parkedKeys (parkedInboxKeys with --inbox) does: no later message of such a key is sent
(or processed) until an operator requeues or abandons the head message it names. Exits with 1
while any key is parked, so that a script or a cron job can alert on it.

Options:
  --inbox                   the inbox's keys (per consumer) instead of the outbox's
  --limit <n>               keys to list, 1 to ${MAX_LIMIT} (default ${DEFAULT_LIMIT})

${COMMON_OPTIONS_HELP}

Examples:
  nestjs-outbox parked -d dist/data-source.js
  nestjs-outbox parked -d dist/data-source.js --inbox --json
`,
  async run(values, output) {
    const table = filteredTable(values);
    const limit = integerOption(values, 'limit') ?? DEFAULT_LIMIT;
    if (typeof limit !== 'number' || limit < 1 || limit > MAX_LIMIT)
      throw new CliUsageError(`--limit must be an integer from 1 to ${MAX_LIMIT}; got ${JSON.stringify(limit)}`);
    return withConnection(values, async (connection) => {
      await requireReadyTable(connection, table);
      const state = table === 'outbox' ? connection.outbox : connection.inbox;
      const keys = await state.findParkedKeys(connection.dataSource, limit);
      if (values.json) {
        printJson(output, { table: table === 'outbox' ? connection.tables.outbox : connection.tables.inbox, keys: keys.map((key) => shown(key, table)) });
      } else if (keys.length === 0) {
        output.out('No ordering key is parked.\n');
      } else {
        output.out(keysTable(keys, table));
        output.out(`\n${counted(keys.length, 'parked key')}: requeue or abandon each head message to release its key.\n`);
      }
      return keys.length === 0 ? ExitCode.OK : ExitCode.FAILURE;
    });
  },
};

/** A key as OutboxAdmin lists it: the outbox's with its transport, the inbox's with its consumer. */
function shown(key: ParkedKey, table: 'outbox' | 'inbox'): Partial<ParkedKey> {
  const { transport, consumer, ...common } = key;
  return table === 'outbox' ? { ...common, transport } : { ...common, consumer };
}

function keysTable(keys: ParkedKey[], table: 'outbox' | 'inbox'): string {
  const columns = [
    { header: 'ORDERING KEY' },
    { header: table === 'outbox' ? 'TRANSPORT' : 'CONSUMER' },
    { header: 'HEAD MESSAGE ID' },
    { header: 'TYPE' },
    { header: 'ATTEMPTS', align: 'right' as const },
    { header: 'WAITING', align: 'right' as const },
    { header: 'LAST ERROR' },
  ];
  const rows = keys.map((key) => [
    key.orderingKey,
    (table === 'outbox' ? key.transport : key.consumer) ?? '',
    key.messageId,
    key.type,
    String(key.attempts),
    String(key.waiting),
    shortened(key.lastError ?? ''),
  ]);
  return printTable(columns, rows);
}

function shortened(text: string): string {
  const characters = [...text];
  return characters.length > SHOWN_ERROR_CHARACTERS ? `${characters.slice(0, SHOWN_ERROR_CHARACTERS - 1).join('')}…` : text;
}
