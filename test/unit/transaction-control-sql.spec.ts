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

  it.each([
    ['a -- comment ended by \\r alone', '-- undo\rROLLBACK TO SAVEPOINT sp'],
    ['a -- comment ended by \\r\\n', 'SELECT 1; -- undo\r\nROLLBACK TO sp'],
    ['\\v and \\f as space', '\v\fCOMMIT'],
    ['-- inside a block comment, which means nothing there', '/* -- */ ROLLBACK'],
    ['a nested block comment closed at its last */', 'SELECT 1; /* a /* b */ c */ ROLLBACK'],
    ['a comment opener inside a string', "SELECT '; /*'; ROLLBACK; -- */"],
    ['a comment opener inside a -- comment', 'SELECT 1 -- ;/*\n; ROLLBACK; -- */'],
    ['a comment opener inside a quoted identifier', 'SELECT 1 AS "/*"; ROLLBACK; -- */'],
    ['$$ inside a word, which opens no dollar quote', 'SELECT 1 AS a$$; ROLLBACK; --$$'],
    ['$$ after a number, which opens one', 'SELECT 1$$;$$; ROLLBACK'],
    ['a dollar quote closed by its own tag only', 'SELECT $a$ $b$ $a$; ROLLBACK'],
    ['an escaped quote and a closing one in an E string', "SELECT E'\\''; ROLLBACK; --'"],
    ['a backslash escape kept across a string continuation', "SELECT E'a'\n'\\''; ROLLBACK; --'"],
    ['a backslash in a plain string (standard_conforming_strings on)', "SELECT '\\'; ROLLBACK; --'"],
    ['a backslash escape in a plain string (standard_conforming_strings off)', "SELECT '\\''; ROLLBACK; --'"],
    ['a backslash in a bit string, which escapes nothing', "SELECT B'\\'; ROLLBACK; --'"],
    ['a doubled quote in a quoted identifier', 'SELECT 1 AS "a;"""; ROLLBACK'],
  ])('finds a control statement behind %s', (_, sql) => {
    expect(holdsTransactionControl(sql)).toBe(true);
  });

  it.each([
    ['a string continued after a line break', "SELECT 'a' -- note\n'; ROLLBACK; --'"],
    ['a dollar-quoted string', 'SELECT $$; ROLLBACK; $$'],
    ['a tagged dollar quote that a tag of other case does not close', 'SELECT $a$; ROLLBACK $A$ $a$'],
    ['an escaped quote in an E string', "SELECT E'\\'; ROLLBACK; --'"],
    ['a quoted identifier', 'SELECT 1 AS "; ROLLBACK; "'],
    ['a nested block comment', 'SELECT 1 /* /* */ ; ROLLBACK */'],
    ['a word that begins with a control word', 'SELECT 1; rollback$ x; commit1'],
    ['a word that begins with a no-break space (a letter to PostgreSQL, not space)', 'SELECT 1;\u00a0ROLLBACK'],
  ])('passes over a control word inside %s', (_, sql) => {
    expect(holdsTransactionControl(sql)).toBe(false);
  });

  it('takes an unclosed string, quoted identifier or dollar quote before a ; for control', () => {
    expect(holdsTransactionControl("SELECT 'never closed; COMMIT")).toBe(true);
    expect(holdsTransactionControl("SELECT E'never closed\\'; COMMIT")).toBe(true);
    expect(holdsTransactionControl('SELECT "never closed; COMMIT')).toBe(true);
    expect(holdsTransactionControl('SELECT $a$ never closed; COMMIT $A$')).toBe(true);
  });

  it('takes an unclosed comment for control, and a nested one as closed only at its last */', () => {
    expect(holdsTransactionControl('SELECT 1; /* never closed')).toBe(true);
    expect(holdsTransactionControl('/* a /* b */ ROLLBACK */ SELECT 1')).toBe(false);
  });

  it('reads runs of comments, strings and dollar signs in one pass', () => {
    // A pattern with comment alternatives backtracks on these for seconds to hours.
    expect(holdsTransactionControl(`${'/* c */'.repeat(100_000)} SELECT 1`)).toBe(false);
    expect(holdsTransactionControl(`SELECT '${';/*'.repeat(100_000)}'`)).toBe(false);
    expect(holdsTransactionControl(`SELECT E'${'\\;'.repeat(100_000)}'`)).toBe(false);
    expect(holdsTransactionControl(`SELECT 'a'${' \n'.repeat(100_000)}x`)).toBe(false);
    expect(holdsTransactionControl(`SELECT ${'$a'.repeat(100_000)}`)).toBe(false);
    expect(holdsTransactionControl(`SELECT 1${'; SELECT 2'.repeat(100_000)}`)).toBe(false);
  });
});
