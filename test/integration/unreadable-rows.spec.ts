import { Logger } from '@nestjs/common';
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { TableKind } from '../../lib/naming/index-names';
import { MessageStatus } from '../../lib/message/message-status';
import { DATABASE_KIND, DatabaseKind, testDatabase } from '../support/database';
import { claim, clearTables, ContractTables, openContractTables, seed, sql, TABLE_NAMES } from './dialect-contract-fixture';
import { STARTUP_TIMEOUT_MS, timeoutFor } from '../support/wait';

const database = testDatabase('it_unreadable_rows');
/** Each property's runs: enough to mix columns and values, few enough for a shared machine. */
const RUNS = { numRuns: 40 };
const PROPERTY_TIMEOUT = timeoutFor(180_000);

/** A value the column can hold on this database and the library never writes there. */
interface Corruption {
  column: string;
  value: unknown;
}

/** JSON text that is not an object: what a JSON column accepts and headers must not be. */
const jsonNotAnObject = fc
  .jsonValue()
  .filter((value) => value === null || typeof value !== 'object' || Array.isArray(value))
  .map((value) => JSON.stringify(value));
/** Text that is not JSON at all, or JSON of something other than an object. */
const notJsonObjectText = fc.oneof(
  jsonNotAnObject,
  fc.string().filter((text) => {
    try {
      const value: unknown = JSON.parse(text);
      return value === null || typeof value !== 'object' || Array.isArray(value);
    } catch {
      return true;
    }
  }),
);
/** Text SQLite keeps as text in an INTEGER column: it does not read as a number. */
const nonNumericText = fc.string().map((text) => `x${text}`);
/**
 * Text no Date can be made of, read as SQLite's times are. JavaScript's date parser is lenient
 * (it reads "x!0" as a time in 2000), and a creation time it makes of some text is harmless: it
 * only dates the message for metrics.
 */
const notATime = nonNumericText.filter((text) => Number.isNaN(new Date(`${text.replace(' ', 'T')}Z`).getTime()));
const blob = fc.uint8Array({ maxLength: 16 }).map((bytes) => Buffer.from(bytes));
const outOfRangeAttempts = fc.oneof(fc.integer({ min: -(2 ** 31), max: -1 }), fc.constant(2 ** 31 - 1));
const outOfRangeMaxAttempts = fc.integer({ min: -(2 ** 31), max: 0 });

/**
 * Per database and table, the columns a claim reads and garbage each can hold there: PostgreSQL
 * and MariaDB/MySQL refuse most of it by type, SQLite stores any value in any column. The lane
 * columns (transport, consumer) are left out: a value that is not the lane's name is never claimed.
 */
function corruptions(kind: DatabaseKind, table: TableKind): fc.Arbitrary<Corruption> {
  const of = (column: string, value: fc.Arbitrary<unknown>) => value.map((v) => ({ column, value: v }));
  const everywhere = [of('headers', jsonNotAnObject), of('attempts', outOfRangeAttempts), of('max_attempts', outOfRangeMaxAttempts)];
  if (kind === 'postgres') {
    // A timestamp PostgreSQL stores and no Date can hold.
    return fc.oneof(...everywhere, ...(table === 'outbox' ? [of('created_at', fc.constantFrom('infinity', '-infinity'))] : []));
  }
  if (kind !== 'sqlite') return fc.oneof(...everywhere, of('headers', notJsonObjectText));
  const textColumns = ['message_id', 'message_type', 'exchange', 'routing_key', 'payload', 'ordering_key', ...(table === 'outbox' ? ['destination'] : [])];
  return fc.oneof(
    ...everywhere,
    of('headers', fc.oneof(notJsonObjectText, blob)),
    of(
      'attempts',
      fc.oneof(
        nonNumericText,
        fc.double({ noNaN: true }).filter((n) => !Number.isInteger(n)),
        blob,
      ),
    ),
    of('max_attempts', fc.oneof(nonNumericText, blob)),
    ...textColumns.map((column) => of(column, blob)),
    ...(table === 'outbox' ? [of('created_at', notATime)] : []),
  );
}

/**
 * A row whose column holds what the library never writes (a hand-written INSERT, a migration,
 * an older version) once made every claim of its lane throw after committing: the whole batch
 * was given back unattempted, every poll, and its neighbours were never sent.
 */
describe(`Claims of rows that cannot be read (${DATABASE_KIND})`, () => {
  let t: ContractTables;

  beforeAll(async () => {
    t = await openContractTables(database);
    // Each row set aside is logged as an error: hundreds of them here, all expected.
    jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(async () => {
    jest.restoreAllMocks();
    await t?.dataSource.destroy();
  });

  describe.each(['outbox', 'inbox'] as TableKind[])('%s table', (table) => {
    it(
      'sets the unreadable row aside as MANUAL_REQUIRED, naming the column, and claims its neighbours',
      async () => {
        await fc.assert(
          fc.asyncProperty(corruptions(DATABASE_KIND, table), fc.nat(3), fc.nat(3), async (corruption, before, after) => {
            await clearTables(t);
            const rows = await seed(
              t,
              table,
              Array.from({ length: before + 1 + after }, () => ({})),
            );
            const bad = rows[before];
            const good = rows.filter((row) => row !== bad);
            await sql(t, `UPDATE {${TABLE_NAMES[table]}} SET ${corruption.column} = ? WHERE id = ?`, [corruption.value, bad.id]);

            const claimToken = randomUUID();
            const claimed = await claim(t, table, 10, claimToken);

            expect(claimed.map((message) => message.id)).toEqual(good.map((row) => row.id));
            const [stored] = await sql(t, `SELECT status, claim_token, last_error FROM {${TABLE_NAMES[table]}} WHERE id = ?`, [bad.id]);
            expect({ status: stored.status, claimToken: stored.claim_token }).toEqual({ status: MessageStatus.MANUAL_REQUIRED, claimToken: null });
            expect(stored.last_error).toContain(`Column ${corruption.column} cannot be read`);
            // Set aside for good: the next claim neither takes it nor fails on it.
            expect(await claim(t, table, 10, randomUUID())).toEqual([]);
          }),
          RUNS,
        );
      },
      PROPERTY_TIMEOUT,
    );

    it('counts no attempt for the unreadable row and keeps its attempts as they were', async () => {
      await clearTables(t);
      const [bad, good] = await seed(t, table, [{ status: MessageStatus.FAILED, attempts: 2 }, {}]);
      await sql(t, `UPDATE {${TABLE_NAMES[table]}} SET headers = '[]' WHERE id = ?`, [bad.id]);

      const claimed = await claim(t, table, 10, randomUUID());

      expect(claimed.map((message) => message.id)).toEqual([good.id]);
      const [stored] = await sql(t, `SELECT status, attempts, last_error FROM {${TABLE_NAMES[table]}} WHERE id = ?`, [bad.id]);
      expect({ status: stored.status, attempts: Number(stored.attempts) }).toEqual({ status: MessageStatus.MANUAL_REQUIRED, attempts: 2 });
      expect(stored.last_error).toMatch(/^UnreadableRowError: Column headers cannot be read: expected a JSON object, found an array\. Correct the row/);
    });
  });
});
