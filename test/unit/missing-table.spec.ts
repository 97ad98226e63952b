import { QueryFailedError } from 'typeorm';
import { OutboxTableMissingError } from '../../lib';
import { missingTable, namingMissingTable } from '../../lib/dialects/missing-table';

/** A driver error as TypeORM wraps it: its fields copied onto the QueryFailedError. */
function wrapped(message: string, fields: Record<string, unknown>): QueryFailedError {
  return new QueryFailedError('SELECT 1', [], Object.assign(new Error(message), fields));
}

describe('missingTable', () => {
  it.each([
    ['PostgreSQL', wrapped('relation "app.outbox_message" does not exist', { code: '42P01' }), 'app.outbox_message'],
    ['MariaDB', wrapped("Table 'app.outbox_message' doesn't exist", { code: 'ER_NO_SUCH_TABLE', errno: 1146 }), 'app.outbox_message'],
    ['SQLite, as TypeORM wraps it', wrapped('no such table: outbox_message', { code: 'SQLITE_ERROR' }), 'outbox_message'],
    ['SQLite, as better-sqlite3 throws it', Object.assign(new Error('no such table: main.inbox_message'), { code: 'SQLITE_ERROR' }), 'main.inbox_message'],
  ])('reads the table from %s', (_, error, table) => {
    expect(missingTable(error)).toBe(table);
  });

  it.each([
    ['a unique violation', wrapped('duplicate key value violates unique constraint', { code: '23505' })],
    ['another SQLite error', Object.assign(new Error('near "SELEC": syntax error'), { code: 'SQLITE_ERROR' })],
    ['a missing column', wrapped('column "claim_token" does not exist', { code: '42703' })],
    ['not an error', 'relation "x" does not exist'],
  ])('finds none in %s', (_, error) => {
    expect(missingTable(error)).toBeUndefined();
  });
});

describe('namingMissingTable', () => {
  it('turns a missing table into OutboxTableMissingError caused by the driver error, and leaves other errors be', () => {
    const driver = wrapped('relation "app.outbox_message" does not exist', { code: '42P01' });
    const named = namingMissingTable(driver) as OutboxTableMissingError;
    expect(named).toBeInstanceOf(OutboxTableMissingError);
    expect(named).toMatchObject({ table: 'app.outbox_message', cause: driver });
    expect(named.message).toMatch(/^the table "app.outbox_message" does not exist/);
    const other = wrapped('duplicate key value', { code: '23505' });
    expect(namingMissingTable(other)).toBe(other);
  });
});
