import { QueryFailedError } from 'typeorm';
import { isConnectionError, isTransientConflict } from '../../lib/dialects/connection-errors';

/** A driver error as the driver throws it: a message and its own fields. */
function driverError(message: string, fields: Record<string, unknown> = {}): Error {
  return Object.assign(new Error(message), fields);
}

/** The same, as TypeORM hands it on from a query. */
const wrapped = (error: Error) => new QueryFailedError('INSERT INTO inbox_message ...', [], error);

describe('isConnectionError', () => {
  it.each([
    [
      'pg: the session was terminated (pg_terminate_backend, server shutdown)',
      wrapped(driverError('terminating connection due to administrator command', { code: '57P01' })),
    ],
    ['pg: the next query on that client', wrapped(driverError('Connection terminated unexpectedly'))],
    ['pg: the server refused the connection', driverError('connect ECONNREFUSED 127.0.0.1:5432', { code: 'ECONNREFUSED' })],
    ['pg: too many connections', wrapped(driverError('sorry, too many clients already', { code: '53300' }))],
    ['pg: the pool timed out waiting for a client', driverError('timeout exceeded when trying to connect')],
    ['pg: a connection exception', wrapped(driverError('connection failure', { code: '08006' }))],
    [
      'mysql2: the server closed the connection',
      wrapped(driverError('Connection lost: The server closed the connection.', { code: 'PROTOCOL_CONNECTION_LOST', fatal: true })),
    ],
    ['mysql2: the next query on that connection', wrapped(driverError("Can't add new command when connection is in closed state", { fatal: true }))],
    ['mysql2: the server refused the connection', driverError('connect ECONNREFUSED 127.0.0.1:3306', { code: 'ECONNREFUSED', fatal: true })],
    ['MariaDB: the connection was killed', wrapped(driverError('Connection was killed', { code: 'ER_CONNECTION_KILLED', errno: 1927 }))],
    [
      'mysql: a read-only server after a failover',
      wrapped(driverError('The MySQL server is running with the --read-only option', { code: 'ER_OPTION_PREVENTS_STATEMENT' })),
    ],
    ['better-sqlite3: a closed database', wrapped(new TypeError('The database connection is not open'))],
    ['better-sqlite3: an I/O error', wrapped(driverError('disk I/O error', { code: 'SQLITE_IOERR_WRITE' }))],
    ['better-sqlite3: a full disk', wrapped(driverError('database or disk is full', { code: 'SQLITE_FULL' }))],
    ['an error whose cause is one', new Error('recording failed', { cause: driverError('read ECONNRESET', { code: 'ECONNRESET' }) })],
  ])('holds for %s', (_, error) => {
    expect(isConnectionError(error)).toBe(true);
  });

  it.each([
    ['pg: NUL in text', wrapped(driverError('invalid byte sequence for encoding "UTF8": 0x00', { code: '22021' }))],
    ['pg: a value too long for its column', wrapped(driverError('value too long for type character varying(255)', { code: '22001' }))],
    ['pg: a unique violation', wrapped(driverError('duplicate key value violates unique constraint', { code: '23505' }))],
    ['mysql2: a data error', wrapped(driverError("Data too long for column 'message_id'", { code: 'ER_DATA_TOO_LONG', fatal: false }))],
    ['better-sqlite3: a constraint', wrapped(driverError('UNIQUE constraint failed', { code: 'SQLITE_CONSTRAINT_UNIQUE' }))],
    ['a handler error', new Error('payment declined')],
    ['not an error at all', 'connection terminated'],
    ['nothing', undefined],
  ])('does not hold for %s', (_, error) => {
    expect(isConnectionError(error)).toBe(false);
  });

  it('survives a cause chain that loops', () => {
    const error = new Error('outer') as Error & { cause?: unknown };
    error.cause = error;
    expect(isConnectionError(error)).toBe(false);
  });
});

describe('isTransientConflict', () => {
  it.each([
    ['a PostgreSQL deadlock', wrapped(driverError('deadlock detected', { code: '40P01' }))],
    ['a PostgreSQL serialization failure', wrapped(driverError('could not serialize access', { code: '40001' }))],
    ['a MySQL deadlock', wrapped(driverError('Deadlock found when trying to get lock', { code: 'ER_LOCK_DEADLOCK' }))],
    ['a MySQL lock wait timeout', wrapped(driverError('Lock wait timeout exceeded', { code: 'ER_LOCK_WAIT_TIMEOUT' }))],
    ['a busy SQLite file', wrapped(driverError('database is locked', { code: 'SQLITE_BUSY' }))],
  ])('holds for %s', (_, error) => {
    expect(isTransientConflict(error)).toBe(true);
  });

  it('does not hold for a data error', () => {
    expect(isTransientConflict(wrapped(driverError('invalid byte sequence', { code: '22021' })))).toBe(false);
  });
});
