import { OutboxError } from './outbox.error';

/**
 * A statement of the library found no table under the name it uses: the outbox or inbox table (or
 * the archive table) was dropped or renamed while the application ran, or the module is configured
 * with another name than the database has. Names the table and what to check.
 */
export class OutboxTableMissingError extends OutboxError {
  constructor(
    /** The table as the database named it in its error (it may carry the schema). */
    readonly table: string,
    options?: { cause?: unknown },
  ) {
    super(
      `the table ${JSON.stringify(table)} does not exist (dropped or renamed?): check that the module's tableName / inboxTableName` +
        ` names the table the database has, and run the library's migrations (OUTBOX_MIGRATIONS, or npx nestjs-outbox migrate) to create it`,
      options,
    );
  }
}
