import { ArchiveTable } from '../engine/state-table';
import { OutboxError } from '../errors';

/**
 * Throws, so that the batch's transaction rolls back, when the rows an archive batch deleted are
 * not the rows it copied. The batch's rows are locked (or the writer is alone) from choosing to
 * deleting, so this never happens; if it did, a row would be lost or archived twice.
 */
export function assertMovedWhole(copied: number, deleted: number, archive: ArchiveTable): void {
  if (copied === deleted) return;
  throw new OutboxError(`retention copied ${copied} row(s) to ${archive.quoted} but deleted ${deleted}; the batch was rolled back`);
}
