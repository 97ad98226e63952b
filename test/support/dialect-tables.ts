import { DataSource } from 'typeorm';
import { DatabaseDialect } from '../../lib/dialects/database-dialect';
import { InboxDialect } from '../../lib/dialects/inbox-dialect';
import { OutboxDialect } from '../../lib/dialects/outbox-dialect';
import { qualifiedTable } from '../../lib/dialects/resolve-dialect';
import { NewOutboxRow } from '../../lib/message/validate-message';
import { createTablesAtStartup } from '../../lib/schema/create-tables-at-startup';

/*
 * For the tests that drive one database's dialect directly, without the Nest module: its tables
 * and the dialect's statements on them.
 */

export const OUTBOX_TABLE = 'outbox_message';
export const INBOX_TABLE = 'inbox_message';

/** A DataSource with the library's tables, and the dialects on them. */
export interface DialectTables {
  dataSource: DataSource;
  dialect: DatabaseDialect;
  outbox: OutboxDialect;
  inbox: InboxDialect;
}

/** Creates the library's tables as start-up creation (`synchronize`) does, and returns the dialects on them. */
export async function createDialectTables(dataSource: DataSource, dialect: DatabaseDialect): Promise<DialectTables> {
  await createTablesAtStartup(dataSource, dialect, { outbox: OUTBOX_TABLE, inbox: INBOX_TABLE });
  return {
    dataSource,
    dialect,
    outbox: dialect.outbox(qualifiedTable(dataSource, OUTBOX_TABLE)),
    inbox: dialect.inbox(qualifiedTable(dataSource, INBOX_TABLE)),
  };
}

/** Inserts outbox rows in one committed transaction, as `OutboxService.publish` would; true per row stored. */
export async function publish(tables: DialectTables, ...rows: NewOutboxRow[]): Promise<boolean[]> {
  return tables.dataSource.transaction(async (manager) => {
    const stored: boolean[] = [];
    for (const row of rows) stored.push(await tables.outbox.insert(manager, row));
    return stored;
  });
}
