import { MessageStatus } from '../../lib';
import { InboxRow } from '../../lib/dialects/inbox-dialect';
import { InboxUpsertSql } from '../../lib/dialects/inbox-upsert-sql';
import { POSTGRES_FILTER } from '../../lib/dialects/postgres/postgres-state-table';
import { SqlQuery } from '../../lib/dialects/sql-query';

const row: InboxRow = {
  consumer: 'c',
  messageId: 'm',
  type: 't',
  bizKey: null,
  orderingKey: null,
  exchange: 'x',
  routingKey: 'r',
  payload: '{}',
  headers: '{}',
  maxAttempts: 3,
};
const numbered = new InboxUpsertSql('"inbox"', { now: 'now()', filter: POSTGRES_FILTER });

/** The parameter numbers in the order the statement's text writes them. */
const written = ({ sql }: SqlQuery) => [...sql.matchAll(/\$(\d+)/g)].map((match) => Number(match[1]));

describe('InboxUpsertSql', () => {
  const statements: [string, SqlQuery][] = [
    ['insertDone', numbered.insertDone(row)],
    ['insertPending', numbered.insertPending(row)],
    ['markStarted', numbered.markStarted(row, { started: 'started', gaveUp: 'gave up' })],
    ['recordFailure', numbered.recordFailure(row, 'boom', true, false)],
  ];

  it.each(statements)('%s writes each parameter once, in the order it is added, as ? parameters need', (_, statement) => {
    expect(written(statement)).toEqual(statement.params.map((_value, index) => index + 1));
  });

  it('judges a failure with the give-up rule, the fatal flag and the added attempt where they are written', () => {
    const { sql, params } = numbered.recordFailure(row, 'boom', true, true);
    expect(sql).toContain(`CASE WHEN $11 OR 1 >= $12 THEN '${MessageStatus.MANUAL_REQUIRED}' ELSE '${MessageStatus.FAILED}' END`);
    expect(sql).toContain(`CASE WHEN $15 OR t.attempts + $16 >= t.max_attempts THEN`);
    expect(params.slice(10)).toEqual([true, 3, 'boom', 0, true, 0]);
  });
});
