import { DataSource } from 'typeorm';
import { MessageChange, MessageFilter, StateTable } from '../engine/state-table';

/**
 * Applies `change` to every row of `table` matching `filter`, one batch of `batchSize` rows per
 * statement (each its own short transaction), up the ids, until no row is left; returns how many
 * rows changed. Only rows that existed when it began are reached, so it ends however fast rows are
 * written meanwhile. `onChanged` runs after each batch that changed rows, so that a worker can
 * start on them before the last batch.
 */
export async function changeInBatches(
  dataSource: DataSource,
  table: StateTable,
  change: MessageChange,
  filter: MessageFilter,
  batchSize: number,
  onChanged: () => void,
): Promise<number> {
  const [newest] = await table.listMessages(dataSource, {}, { after: null, limit: 1, newestFirst: true });
  if (!newest) return 0;
  let changed = 0;
  let after: string | null = null;
  for (;;) {
    const batch = await table.changeMessages(dataSource, change, filter, { after, through: newest.id, size: batchSize });
    if (batch.lastId === null) return changed;
    changed += batch.changed;
    if (batch.changed > 0) onChanged();
    after = batch.lastId;
  }
}
