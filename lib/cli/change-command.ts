import { changeInBatches } from '../admin/batched-change';
import { filterForChange, wakesWorker } from '../admin/change-scope';
import { checkedFilter, FilteredTable } from '../admin/message-filter-validation';
import { checkedBatchSize } from '../admin/page-options';
import { MessageChange } from '../engine/state-table';
import { COMMON_OPTIONS_HELP, integerOption } from './cli-arguments';
import { CliCommand, ExitCode } from './cli-command';
import { withConnection } from './cli-connection';
import { counted, printJson } from './cli-format';
import { CliUsageError } from './cli-usage.error';
import { checkedByAdmin, FILTER_OPTIONS, FILTER_OPTIONS_HELP, filteredTable, filterFields } from './filter-options';
import { requireReadyTable } from './table-schema-state';

/** One of the changes OutboxAdmin makes to every message a filter selects. */
export interface ChangeSpec {
  change: MessageChange;
  summary: string;
  /** What it does, for `--help`: the paragraphs between the synopsis and the options. */
  description: string;
  examples: string[];
  /** OutboxAdmin's method for each table it applies to, whose name its refusals carry. */
  operations: Partial<Record<FilteredTable, string>>;
  /** The past tense for the result: `Requeued`. */
  done: string;
}

/** Who finds changed rows, in a process that runs no dispatcher or worker to wake. */
const PICKED_UP: Record<FilteredTable, string> = {
  outbox: 'no dispatcher is woken from here: running dispatchers find the rows at their next poll',
  inbox: 'no inbox worker is woken from here: running deferred inbox workers find the rows at their next poll',
};

const WAKE_UP_HELP = {
  outbox: 'Nothing is woken from here: running dispatchers find the changed rows at their next poll.',
  both: `Nothing is woken from here: running dispatchers (deferred inbox workers, with --inbox) find
the changed rows at their next poll.`,
};

/**
 * A command applying `spec.change` as OutboxAdmin does (its checks, then bounded batches up the
 * ids, each batch its own short transaction), without the wake-up: no dispatcher runs here.
 */
export function changeCommand(name: string, spec: ChangeSpec): CliCommand {
  const tables = Object.keys(spec.operations) as FilteredTable[];
  return {
    name,
    summary: spec.summary,
    options: { ...FILTER_OPTIONS, 'batch-size': { type: 'string' } },
    help: `Usage: nestjs-outbox ${name} -d <data-source file> <filter>${tables.includes('inbox') ? ' [--inbox]' : ''} [--batch-size n] [--json]

${spec.description}

An empty filter is refused, so that a typo cannot reach a whole table. Rows change in batches of
--batch-size (default 500, at most 5000), each one statement in a short transaction of its own,
safe while dispatchers run: a row claimed meanwhile is left alone. Rows written after the command
began are left alone too.

${tables.includes('inbox') ? WAKE_UP_HELP.both : WAKE_UP_HELP.outbox}

${FILTER_OPTIONS_HELP}${tables.includes('inbox') ? '' : '\n  (the inbox has no ' + name + ')'}

  --batch-size <n>          rows per statement, 1 to 5000 (default 500)

${COMMON_OPTIONS_HELP}

Examples:
${spec.examples.map((example) => `  ${example}`).join('\n')}
`,
    async run(values, output) {
      const table = filteredTable(values);
      const operation = spec.operations[table];
      if (operation === undefined) throw new CliUsageError(`${name} applies to the outbox only (OutboxAdmin has no inbox ${name})`);
      const filter = checkedByAdmin(() => filterForChange(spec.change, checkedFilter(table, filterFields(values, table)), operation));
      const batchSize = checkedByAdmin(() => checkedBatchSize({ batchSize: integerOption(values, 'batch-size') as number | undefined }));
      return withConnection(values, async (connection) => {
        await requireReadyTable(connection, table);
        const state = table === 'outbox' ? connection.outbox : connection.inbox;
        const changed = await changeInBatches(connection.dataSource, state, spec.change, filter, batchSize, () => undefined);
        const note = changed > 0 && wakesWorker(spec.change, filter) ? PICKED_UP[table] : null;
        const tableName = table === 'outbox' ? connection.tables.outbox : connection.tables.inbox;
        if (values.json) {
          printJson(output, { operation: name, table: tableName, changed, note });
        } else {
          output.out(`${spec.done} ${counted(changed, table === 'outbox' ? 'outbox message' : 'inbox delivery')} in ${tableName}.\n`);
          if (note) output.out(`Note: ${note}.\n`);
        }
        return ExitCode.OK;
      });
    },
  };
}
