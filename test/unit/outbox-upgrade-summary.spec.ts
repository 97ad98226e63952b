import { describeMysqlServer } from '../../lib/dialects/mysql/mysql-server';
import { mysqlSchemaSql } from '../../lib/dialects/mysql/mysql-schema';
import { postgresSchemaSql } from '../../lib/dialects/postgres/postgres-schema';
import { sqliteSchemaSql } from '../../lib/dialects/sqlite/sqlite-schema';
import { outboxUpgradeSummary } from '../../lib/schema/outbox-upgrade-summary';

const V2 = 'transport and destination columns, lane index';
const V3 = 'a business-key unique index over the rows that have one';
const V4 = 'an ordering index over the keys of unfinished rows only, and a lane index leading with the status in place of the processing index';

describe('outboxUpgradeSummary', () => {
  it.each([
    ['PostgreSQL', postgresSchemaSql, [V2, V3], [V3]],
    ['MariaDB', mysqlSchemaSql(describeMysqlServer('10.11.0-MariaDB')), [V2, V4], [V4]],
    ['MySQL', mysqlSchemaSql(describeMysqlServer('8.4.0')), [V2, V4], [V4]],
    ['SQLite', sqliteSchemaSql, [V2], []],
  ])('names on %s only what the versions change there', (_, schemaSql, fromOne, fromTwo) => {
    expect(outboxUpgradeSummary(schemaSql, 1)).toBe(fromOne.join('; '));
    expect(outboxUpgradeSummary(schemaSql, 2)).toBe(fromTwo.length > 0 ? fromTwo.join('; ') : 'no statement changes the table on this database');
  });
});
