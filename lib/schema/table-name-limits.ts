import { IdentifierLimit } from '../dialects/schema-sql';
import { longestDerivedName, TableKind } from '../naming/index-names';
import { OutboxOptionsError } from '../errors';
import { MAX_TABLE_NAME_LENGTH, tableNameOption, TableNames } from '../naming/table-names';

/**
 * The longest name a table of `kind` may have on a database with `limit`: the identifier limit
 * less what the longest index name adds to the table name. Table names are ASCII (see
 * `tableNameProblem`), so a limit in bytes is the same number of characters.
 */
export function longestTableName(kind: TableKind, limit: IdentifierLimit | undefined): number {
  if (!limit) return MAX_TABLE_NAME_LENGTH;
  return Math.min(MAX_TABLE_NAME_LENGTH, limit.max - longestDerivedName(kind).extraLength);
}

/** Why a table name is too long for the database, if it is. */
export function tableNameLengthProblem(kind: TableKind, name: string, limit: IdentifierLimit | undefined): string | undefined {
  const longest = longestTableName(kind, limit);
  if (name.length <= longest || !limit) return undefined;
  const option = tableNameOption(kind);
  const derived = longestDerivedName(kind);
  return (
    `${option} ${JSON.stringify(name)} has ${name.length} characters, but on ${limit.database} an ${kind} table name may have at most ${longest}:` +
    ` its longest index name, ${derived.pattern}, adds ${derived.extraLength}, and ${limit.database} identifiers have at most ${limit.max} ${limit.unit}` +
    ` (${limit.database} ${limit.beyond}). Choose a shorter ${option}`
  );
}

/** Throws `OutboxOptionsError` when a table name is too long for the database of `limit`. */
export function assertTableNamesFit(limit: IdentifierLimit | undefined, tables: TableNames): void {
  const problems = [tableNameLengthProblem('outbox', tables.outbox, limit), tableNameLengthProblem('inbox', tables.inbox, limit)];
  const found = problems.filter((problem): problem is string => problem !== undefined);
  if (found.length > 0) throw new OutboxOptionsError(found);
}

/** The same for one table, as a migration creates it. */
export function assertTableNameFits(kind: TableKind, name: string, limit: IdentifierLimit | undefined): void {
  const problem = tableNameLengthProblem(kind, name, limit);
  if (problem) throw new OutboxOptionsError([problem]);
}
