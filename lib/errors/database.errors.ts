import { OutboxError } from './outbox.error';

// The errors of the database under the outbox: slow, without the library's tables, or behind.

/**
 * The database did not answer a statement of `publish()`, `cancel()` or a webhook's intake within
 * `statementTimeoutMs`: it is overloaded, failing over, or unreachable while its connections stay
 * open. The connection was closed, so the pool does not hand it out again, and the transaction it
 * carried cannot commit. Retryable: try again once the database answers.
 */
export class DatabaseTimeoutError extends OutboxError {
  constructor(
    /** The bound that passed, in milliseconds. */
    readonly timeoutMs: number,
  ) {
    super(
      `the database did not answer within ${timeoutMs} ms (statementTimeoutMs); its connection was closed and the transaction cannot commit: retry once the database answers`,
    );
  }
}

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

/**
 * The library's tables are not there, or not of the library's shape, at start-up. Each problem
 * names the table and how to mend it.
 */
export class OutboxSchemaError extends OutboxError {
  constructor(
    /** Each problem, naming the table and how to mend it. */
    readonly problems: string[],
  ) {
    super(`The outbox tables are not ready: ${problems.join('; ')}`);
  }
}

/**
 * With `awaitStandby`, no named standby confirmed in time that it holds a claimed batch's rows
 * (it lags, is disconnected, or the database role cannot read its position). The batch is given
 * back unattempted and claimed again at the next poll: a standby outage costs no attempts.
 */
export class StandbyLagError extends OutboxError {}
