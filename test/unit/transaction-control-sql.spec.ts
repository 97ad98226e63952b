import fc from 'fast-check';
import { holdsTransactionControl } from '../../lib/outbox/transaction-control-sql';

const CONTROL = [
  'ROLLBACK TO SAVEPOINT s',
  'rollback to s',
  'ROLLBACK AND CHAIN',
  'SAVEPOINT s',
  'RELEASE SAVEPOINT s',
  'release s',
  'COMMIT',
  'commit and chain',
  'END',
  'BEGIN',
  'START TRANSACTION ISOLATION LEVEL SERIALIZABLE',
  'ABORT',
  "PREPARE TRANSACTION 'tx-1'",
];

/** Whitespace and comments PostgreSQL lets stand before a statement. */
const padding = fc
  .array(fc.constantFrom(' ', '\n', '\t', '-- a note\n', '/* a note */', '/* a /* nested */ note */', '/**/'), { maxLength: 4 })
  .map((parts) => parts.join(''));

describe('holdsTransactionControl', () => {
  it('finds a control statement behind any whitespace and comments, first or after a ;', () => {
    fc.assert(
      fc.property(fc.constantFrom(...CONTROL), padding, fc.constantFrom('', 'SELECT 1;', "UPDATE t SET a = 'x';"), (statement, before, leading) => {
        expect(holdsTransactionControl(`${leading}${before}${statement}`)).toBe(true);
      }),
    );
  });

  it.each([
    'SELECT 1',
    'SELECT CASE WHEN a THEN 1 END FROM t',
    'UPDATE t SET ended = true, release_date = now()',
    'INSERT INTO releases (id) VALUES (1)',
    'SELECT 1 -- rollback',
    'SELECT /* rollback */ 1',
    '/* rollback */ SELECT 1',
    '-- commit\nSELECT 1',
    'SELECT endpoint FROM t',
    '',
  ])('passes over %j', (sql) => {
    expect(holdsTransactionControl(sql)).toBe(false);
  });

  it('takes an unclosed comment for control, and a nested one as closed only at its last */', () => {
    expect(holdsTransactionControl('SELECT 1; /* never closed')).toBe(true);
    expect(holdsTransactionControl('/* a /* b */ ROLLBACK */ SELECT 1')).toBe(false);
  });

  it('reads runs of comments and of unclosed comments after ; in one pass', () => {
    // A pattern with comment alternatives backtracks on these for seconds to hours.
    expect(holdsTransactionControl(`${'/* c */'.repeat(100_000)} SELECT 1`)).toBe(false);
    expect(holdsTransactionControl(`SELECT '${';/*'.repeat(100_000)}'`)).toBe(true);
    expect(holdsTransactionControl(`SELECT 1${'; SELECT 2'.repeat(100_000)}`)).toBe(false);
  });
});
