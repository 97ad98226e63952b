import { MessagePageOptions } from '../admin/message-filter';
import { checkedFilter } from '../admin/message-filter-validation';
import { checkedWindow } from '../admin/page-options';
import { ListedMessage } from '../engine/message-views';
import { COMMON_OPTIONS_HELP, integerOption, stringOption } from './cli-arguments';
import { CliCommand, ExitCode } from './cli-command';
import { withConnection } from './cli-connection';
import { counted, formatInstant, printJson } from './cli-format';
import { checkedByAdmin, FILTER_OPTIONS, FILTER_OPTIONS_HELP, filteredTable, filterFields } from './filter-options';
import { requireReadyTable } from './table-schema-state';
import { printTable, PrintedColumn } from './table-printer';

/** The longest `last_error` a listed row shows; `--json` has all of it. */
const SHOWN_ERROR_CHARACTERS = 80;

/** `nestjs-outbox list`: `OutboxAdmin.listMessages` (or `listInboxMessages`) from the command line. */
export const listCommand: CliCommand = {
  name: 'list',
  summary: 'list the messages a filter selects, one page at a time',
  options: { ...FILTER_OPTIONS, limit: { type: 'string' }, after: { type: 'string' }, order: { type: 'string' } },
  help: `Usage: nestjs-outbox list -d <data-source file> [filter] [--inbox] [--limit n] [--after id] [--order newest|oldest] [--json]

Lists the outbox messages (inbox deliveries with --inbox) the filter selects, as
OutboxAdmin.listMessages does: newest first, one page of --limit rows. An empty filter lists every
row. A page ends with the option that shows the next one (--after <the last row's id>).

${FILTER_OPTIONS_HELP}

Page:
  --limit <n>               rows per page, 1 to 1000 (default 100)
  --after <id>              the rows after this row id: the previous page's next
  --order <order>           newest (default) or oldest first

${COMMON_OPTIONS_HELP}

Examples:
  nestjs-outbox list -d dist/data-source.js --status MANUAL_REQUIRED --transport partners
  nestjs-outbox list -d dist/data-source.js --inbox --consumer Billing.handle --status FAILED,MANUAL_REQUIRED --json
`,
  async run(values, output) {
    const table = filteredTable(values);
    const filter = checkedByAdmin(() => checkedFilter(table, filterFields(values, table)));
    // checkedWindow refuses a limit that is not a number, quoting it.
    const page = { after: stringOption(values, 'after'), limit: integerOption(values, 'limit'), order: stringOption(values, 'order') } as MessagePageOptions;
    const window = checkedByAdmin(() => checkedWindow(page));
    return withConnection(values, async (connection) => {
      await requireReadyTable(connection, table);
      const state = table === 'outbox' ? connection.outbox : connection.inbox;
      // One row more than the page tells whether another page follows, as OutboxAdmin pages.
      const rows = await state.listMessages(connection.dataSource, filter, { ...window, limit: window.limit + 1 });
      const messages = rows.slice(0, window.limit);
      const next = rows.length > window.limit ? messages[messages.length - 1].id : null;
      if (values.json) {
        printJson(output, {
          table: table === 'outbox' ? connection.tables.outbox : connection.tables.inbox,
          messages: messages.map((row) => listed(row, table)),
          next,
        });
        return ExitCode.OK;
      }
      if (messages.length === 0) {
        output.out('No message matches.\n');
        return ExitCode.OK;
      }
      output.out(messagesTable(messages, table));
      const order = window.newestFirst ? 'newest first' : 'oldest first';
      output.out(
        `\n${counted(messages.length, table === 'outbox' ? 'message' : 'delivery')} (${order}).${next ? ` More: the same command with --after ${next}` : ''}\n`,
      );
      return ExitCode.OK;
    });
  },
};

/** A row as OutboxAdmin lists it: the outbox's with its transport and destination, the inbox's with its consumer. */
function listed(row: ListedMessage, table: 'outbox' | 'inbox'): ListedMessage {
  const { transport, destination, consumer, ...common } = row;
  return table === 'outbox' ? { ...common, transport, destination } : { ...common, consumer };
}

function messagesTable(messages: ListedMessage[], table: 'outbox' | 'inbox'): string {
  const scope: PrintedColumn = { header: table === 'outbox' ? 'TRANSPORT' : 'CONSUMER' };
  const columns: PrintedColumn[] = [
    { header: 'ID', align: 'right' },
    { header: 'MESSAGE ID' },
    { header: 'STATUS' },
    { header: 'TYPE' },
    { header: 'BIZ KEY' },
    scope,
    { header: 'ATTEMPTS', align: 'right' },
    { header: 'CREATED' },
    { header: 'LAST ERROR' },
  ];
  const rows = messages.map((message) => [
    message.id,
    message.messageId,
    message.status,
    message.type,
    message.bizKey ?? '',
    (table === 'outbox' ? message.transport : message.consumer) ?? '',
    String(message.attempts),
    formatInstant(message.createdAt),
    shortened(message.lastError ?? ''),
  ]);
  return printTable(columns, rows);
}

function shortened(text: string): string {
  const characters = [...text];
  return characters.length > SHOWN_ERROR_CHARACTERS ? `${characters.slice(0, SHOWN_ERROR_CHARACTERS - 1).join('')}…` : text;
}
