import fc from 'fast-check';
import type { EventEmitter } from 'node:events';
import { Client } from 'pg';
import { holdsTransactionControl } from '../../lib/outbox/transaction-control-sql';
import { describeOn } from '../support/database';
import { POSTGRES_URL } from '../support/environment';
import { STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS } from '../support/wait';

/** The command tags of PostgreSQL's statements that begin, end or mark a transaction or savepoint. */
const CONTROL_TAGS = new Set(['BEGIN', 'START TRANSACTION', 'COMMIT', 'ROLLBACK', 'SAVEPOINT', 'RELEASE', 'PREPARE TRANSACTION']);
/** Cases per run (about a second; FC_RUNS for more). FC_SEED replays the seed a failure reports. */
const RUNS = Number(process.env.FC_RUNS) || 500;

/** Statements that act on the transaction each case opens (with a savepoint `probe`). */
const control = fc.constantFrom(
  'ROLLBACK TO SAVEPOINT probe',
  'rollback to probe',
  'SAVEPOINT other',
  'RELEASE SAVEPOINT probe',
  'COMMIT',
  'end',
  'ABORT',
  'ROLLBACK',
  'BEGIN',
  'start transaction',
);

/** What PostgreSQL's lexer treats specially: the bodies of literals and comments are made of these. */
const fragment = fc.constantFrom(
  ...[';', "'", "''", '"', '\\', "\\'", '$$', '$a$', '$A$', '$b', '--', '/*', '*/', '\n', '\r', '\r\n', '\v', '\f', '\t', ' '],
  ...['\u00a0', 'E', 'e', 'B', 'U&', '1', 'a', '_', 'x'],
  // A statement's end that opens something, or closes what an earlier one opened.
  ...[';/*', ';--', '; $$', "; E'", ";'", '*/;', "';", '$$;', '"; '],
  ...['ROLLBACK TO probe', 'COMMIT', '; ROLLBACK TO probe;', ';commit;'],
);
const body = fc.array(fragment, { maxLength: 6 }).map((parts) => parts.join(''));
const lineEnd = fc.constantFrom('\n', '\r', '\r\n');

const lineComment = fc.tuple(body, lineEnd).map(([text, end]) => `--${text.replace(/[\r\n]/g, '')}${end}`);
const blockComment = fc.oneof(
  body.map((text) => `/*${text.replace(/\*\/|\/\*/g, '')}*/`),
  fc.tuple(body, body).map(([a, b]) => `/* ${a.replace(/\*\/|\/\*/g, '')} /* ${b.replace(/\*\/|\/\*/g, '')} */ */`),
);
/** Whitespace and comments between tokens. */
const padding = fc
  .array(fc.oneof(fc.constantFrom(' ', '\n', '\r', '\r\n', '\t', '\f', '\v'), lineComment, blockComment), { maxLength: 3 })
  .map((parts) => parts.join(''));

/** A literal (or an aliased one) with a body of fragments, quoted as each kind wants. */
const literal = fc.oneof(
  body.map((text) => `'${text.replace(/'/g, "''")}'`),
  body.map((text) => `E'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`),
  fc.tuple(fc.constantFrom('$$', '$a$', '$A$'), body).map(([tag, text]) => `${tag}${text.split(tag).join('')}${tag}`),
  body.map((text) => `1 AS "${text.replace(/"/g, '""')}"`),
  fc.tuple(body, fc.constantFrom('\n', ' -- c\n', '\r', '\n\n')).map(([text, gap]) => `'a'${gap}'${text.replace(/'/g, "''")}'`),
  fc.tuple(body, fc.constantFrom('\n', ' -- c\r')).map(([text, gap]) => `E'a'${gap}'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`),
  fc.constantFrom("B'0101'", "X'1f'", '1', 'a$$', '1 AS x$$', "U&'d\\0061t'"),
);
const select = fc
  .tuple(fc.array(fc.tuple(padding, literal), { minLength: 1, maxLength: 3 }), padding)
  .map(([items, end]) => `SELECT ${items.map(([before, item]) => `${before}${item}`).join(', ')}${end}`);
const statement = fc.oneof(control, select, select);

/**
 * Statements joined by `;` with whitespace and comments around; sometimes one raw fragment put
 * anywhere, so that a quote, a comment opener or a dollar sign moves the lines PostgreSQL draws.
 */
const script = fc
  .tuple(fc.array(fc.tuple(padding, statement), { minLength: 1, maxLength: 4 }), fc.option(fc.tuple(fragment, fc.nat()), { freq: 2 }))
  .map(([statements, raw]) => {
    const text = statements.map(([before, s]) => `${before}${s}`).join(';');
    if (!raw) return text;
    const [piece, at] = raw;
    const cut = at % (text.length + 1);
    return text.slice(0, cut) + piece + text.slice(cut);
  });

/**
 * The scanner of raw transaction control (which decides whether sending on commit must ask the
 * table which messages stand) against PostgreSQL's own lexer and parser: each generated text runs
 * inside a transaction, and the command tags the server reports say whether it ran a statement of
 * transaction control. Whenever it did, the scanner must have said yes; a yes where it did not
 * only costs a query.
 */
describeOn(['postgres'], 'Transaction control in raw SQL, against PostgreSQL', () => {
  let client: Client;
  /** The command tags of the statements the server completed since the last reset. */
  const tags: string[] = [];

  beforeAll(async () => {
    client = new Client({ connectionString: POSTGRES_URL });
    await client.connect();
    // A simple query's CommandComplete per statement, also for those before a statement that failed.
    (client as unknown as { connection: EventEmitter }).connection.on('commandComplete', (message: { text: string }) => tags.push(message.text));
    client.on('notice', () => undefined);
    await client.query("SET statement_timeout = '5s'");
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(async () => {
    await client?.end();
  });

  /** Runs `sql` in a transaction with a savepoint; whether PostgreSQL ran transaction control in it. */
  async function runsControl(sql: string, standardStrings: boolean): Promise<boolean> {
    await client.query(`SET standard_conforming_strings = ${standardStrings ? 'on' : 'off'}; BEGIN; SAVEPOINT probe`);
    tags.length = 0;
    await client.query(sql).catch(() => undefined);
    const ran = tags.some((tag) => CONTROL_TAGS.has(tag.replace(/ \d+$/, '')));
    await client.query('ROLLBACK');
    return ran;
  }

  it(
    'finds every statement of transaction control PostgreSQL runs',
    async () => {
      const seen = { controls: 0, flagged: 0 };
      const seed = Number(process.env.FC_SEED) || Date.now();
      await fc.assert(
        fc.asyncProperty(script, fc.boolean(), async (sql, standardStrings) => {
          const ran = await runsControl(sql, standardStrings);
          const found = holdsTransactionControl(sql);
          if (ran) seen.controls++;
          if (found) seen.flagged++;
          if (ran && !found)
            throw new Error(`PostgreSQL ran transaction control the scanner missed (standard_conforming_strings ${standardStrings}): ${JSON.stringify(sql)}`);
        }),
        { numRuns: RUNS, seed },
      );
      // The generator must keep its power: texts that do run transaction control, and ones that do not.
      expect(seen.controls).toBeGreaterThan(RUNS / 10);
      expect(seen.flagged).toBeLessThan(RUNS);
    },
    timeoutFor(WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS),
  );
});
