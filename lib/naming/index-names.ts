/** Which of the library's tables: the outbox or the inbox. */
export type TableKind = 'outbox' | 'inbox';

/** Names of the indexes the state machine needs on either table. */
export function stateIndexNames(table: string) {
  return {
    primaryKey: `PK_${table}`,
    claimable: `IDX_${table}_claimable`,
    processing: `IDX_${table}_processing`,
    ordering: `IDX_${table}_ordering`,
  };
}

/** Names of the outbox table's constraints and indexes, the same on every database. */
export function outboxIndexNames(table: string) {
  return {
    ...stateIndexNames(table),
    messageId: `UQ_${table}_message_id`,
    typeBizKey: `UQ_${table}_type_biz_key`,
    /** Schema version 2: the claim index per transport (beside `claimable` on PostgreSQL, in its place elsewhere). */
    lane: `IDX_${table}_lane`,
    /**
     * Schema version 4 on MySQL/MariaDB: the ordering index over the generated key of unfinished
     * rows. No longer than the longest name before it, so that it shortens no table name's limit.
     */
    unfinished: `IDX_${table}_unfinished`,
  };
}

/** Names of the inbox table's constraints and indexes, the same on every database. */
export function inboxIndexNames(table: string) {
  return { ...stateIndexNames(table), consumerMessageId: `UQ_${table}_consumer_message_id`, consumerBizKey: `UQ_${table}_consumer_biz_key` };
}

/**
 * The table retention moves a table's finished rows to in archive mode (`retentionMode:
 * 'archive'`), beside it in the same schema or database.
 */
export function archiveTableName(table: string): string {
  return `${table}_archive`;
}

/**
 * Names of an archive table and its key and index, derived from the name of the table it
 * archives. Each is shorter than the longest name of the table itself, so that every table name
 * the identifier limit allows has an archive too.
 */
export function archiveNames(table: string) {
  return { table: archiveTableName(table), primaryKey: `PK_${table}_archive`, archivedAt: `IDX_${table}_archived` };
}

/** Every constraint and index name derived from the name of a table of `kind`. */
export function derivedNames(kind: TableKind, table: string): string[] {
  return Object.values(kind === 'outbox' ? outboxIndexNames(table) : inboxIndexNames(table));
}

/**
 * The longest name derived from a table of `kind`, as a pattern with `<name>` for the table name
 * (e.g. `UQ_<name>_consumer_message_id`), and how many characters it adds to the table name: the
 * table name's length limit on a database is its identifier limit minus these.
 */
export function longestDerivedName(kind: TableKind): { pattern: string; extraLength: number } {
  const placeholder = '<name>';
  const names = [...derivedNames(kind, placeholder), ...Object.values(archiveNames(placeholder))];
  const pattern = names.reduce((longest, name) => (name.length > longest.length ? name : longest));
  return { pattern, extraLength: pattern.length - placeholder.length };
}
