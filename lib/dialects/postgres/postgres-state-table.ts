import { DataSource } from 'typeorm';
import { ArchiveTable } from '../../engine/state-table';
import { MessageStatus } from '../../message/message-status';
import { FilterFlavour, LIKE_ESCAPE, likeContaining } from '../message-filter-sql';
import { MessageScope } from '../message-ref-sql';
import { execute } from '../sql-executor';
import { SqlStateTable } from '../sql-state-table';
import { noPerClaimValues, StateTableFlavour } from '../state-table-flavour';
import { FINISHED_SQL, orderingRule, UNFINISHED_SQL } from '../status-sql';

const { PROCESSING } = MessageStatus;

/** Operator filters on PostgreSQL: `$n` parameters, timestamptz times, a case-sensitive LIKE. */
export const POSTGRES_FILTER: FilterFlavour = {
  placeholder: (n) => `$${n}`,
  // Text, which PostgreSQL casts to the bigint it is compared with.
  id: (id) => id,
  time: (params, instant) => `${params.add(instant.toISOString())}::timestamptz`,
  contains: (column, params, text) => `${column} LIKE ${params.add(likeContaining(text))} ESCAPE '${LIKE_ESCAPE}'`,
};

/**
 * PostgreSQL's spelling of the state table: `$n` parameters, `now()`, counts from `RETURNING`,
 * `SKIP LOCKED` subqueries, and batch settles by `id = ANY` for one claim's rows or through
 * `unnest` for per-row values (one statement per outcome per batch).
 */
function postgresFlavour(table: string): StateTableFlavour {
  return {
    now: 'now()',
    nowPlus: (ms) => `now() + ${ms} * interval '1 millisecond'`,
    nowMinus: (ms) => `now() - ${ms} * interval '1 millisecond'`,
    duration: (ms) => ms,
    filter: POSTGRES_FILTER,
    async run(target, sql, params) {
      const result = await execute(target, sql, params);
      return { rows: result.records, changed: result.records.length };
    },
    returningId: '\n       RETURNING id',
    // Text whatever the driver's int8 parsing.
    selectId: (column) => `${column}::text`,
    readTime: (value) => value as Date | null,
    skipLocked: (alias) => `FOR UPDATE${alias ? ` OF ${alias}` : ''} SKIP LOCKED`,
    byClaimToken: '',
    orderingRule: (scope) => orderingRule(table, scope ?? ''),
    laterUnfinishedCount: (scope) =>
      `(SELECT count(*) FROM ${table} AS w
               WHERE w.ordering_key = c.ordering_key ${scope ? `AND w.${scope} = c.${scope}` : ''} AND w.id > c.id AND w.${UNFINISHED_SQL})`,
    updateClaims(claims, values, set) {
      const token = claims[0].claimToken;
      if (values.length === 0 && claims.every((claim) => claim.claimToken === token)) {
        // One claim's rows (a dispatcher's batch always is): the ids and the one token, through
        // the primary key, instead of a token per row that the server parses and joins on.
        return {
          sql: `UPDATE ${table} AS t SET ${set({ column: (name) => `t.${name}`, value: noPerClaimValues })}
       WHERE t.id = ANY($1::bigint[]) AND t.claim_token = $2 AND t.status = '${PROCESSING}'
       RETURNING t.id`,
          params: [claims.map((c) => c.id), token],
        };
      }
      const names = ['id', 'token', ...values.map((v) => v.name)];
      const types = ['bigint', 'uuid', ...values.map((v) => v.type)];
      return {
        sql: `UPDATE ${table} AS t SET ${set({ column: (name) => `t.${name}`, value: (name) => `s.${name}` })}
       FROM unnest(${types.map((type, i) => `$${i + 1}::${type}[]`).join(', ')}) AS s(${names.join(', ')})
       WHERE t.id = s.id AND t.claim_token = s.token AND t.status = '${PROCESSING}'
       RETURNING t.id`,
        params: [claims.map((c) => c.id), claims.map((c) => c.claimToken), ...values.map((v) => claims.map((c) => v.of(c)))],
      };
    },
  };
}

/** PostgreSQL transitions shared by the outbox and inbox tables. */
export class PostgresStateTable extends SqlStateTable {
  /**
   * @param table the schema-qualified, quoted table name
   * @param scope the column that scopes message ids and ordering keys (`consumer` in the inbox)
   */
  constructor(table: string, label: string, scope: MessageScope) {
    super(table, label, scope, postgresFlavour(table));
  }

  async archiveFinished(dataSource: DataSource, archive: ArchiveTable, olderThanMs: number, limit: number): Promise<number> {
    // One statement, so one transaction: the rows deleted are the rows inserted, as they were
    // deleted. The locking subquery re-checks each candidate against its latest version (a row a
    // replay made PENDING meanwhile no longer qualifies) and passes over rows others hold.
    const columns = archive.columns.join(', ');
    const result = await execute(
      dataSource,
      // The batch is chosen once, in a MATERIALIZED CTE: as an IN subquery it may be rescanned
      // per row, each rescan taking rows past the limit.
      `WITH chosen AS MATERIALIZED (
         SELECT id FROM ${this.table}
         WHERE ${FINISHED_SQL} AND processed_at < now() - $1 * interval '1 millisecond'
         ORDER BY id LIMIT $2
         FOR UPDATE SKIP LOCKED),
       moved AS (
         DELETE FROM ${this.table} WHERE id IN (SELECT id FROM chosen) AND ${FINISHED_SQL}
         RETURNING ${columns})
       INSERT INTO ${archive.quoted} (${columns}, archived_at)
       SELECT ${columns}, now() FROM moved
       RETURNING archive_id`,
      [olderThanMs, limit],
    );
    return result.records.length;
  }
}
