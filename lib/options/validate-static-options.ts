import { OutboxOptionsError } from '../errors';
import type { OutboxModuleStaticOptions } from './outbox-module-static-options';
import { laneOptionProblems } from './transport-lanes';
import { outboxNameProblem } from '../naming/outbox-name';
import { DEFAULT_INBOX_TABLE, DEFAULT_OUTBOX_TABLE, tableNameProblem, tableNamesClash, TableNames } from '../naming/table-names';

/**
 * Problems of the options that shape the module (`OutboxModuleStaticOptions`): what can be told
 * without a database, so that it fails where the application declares the module.
 */
export function staticOptionProblems(statics: OutboxModuleStaticOptions): string[] {
  const tables = { outbox: statics.tableName ?? DEFAULT_OUTBOX_TABLE, inbox: statics.inboxTableName ?? DEFAULT_INBOX_TABLE };
  const nameProblems = [tableNameProblem('tableName', tables.outbox), tableNameProblem('inboxTableName', tables.inbox)];
  const problems = nameProblems.filter((problem): problem is string => problem !== undefined);
  // Overlaps are only worth telling once both names are valid.
  const clash = problems.length === 0 ? tableNamesClash(tables) : undefined;
  if (clash) problems.push(clash);
  const transport = transportProblem('transport', statics.transport);
  if (transport) problems.push(transport);
  problems.push(...laneOptionProblems(statics, transportProblem));
  if (statics.dataSourceName !== undefined && (typeof statics.dataSourceName !== 'string' || statics.dataSourceName === '')) {
    problems.push(`dataSourceName must be the name of a TypeORM DataSource (a non-empty string), got ${describe(statics.dataSourceName)}`);
  }
  const name = outboxNameProblem('name', statics.name);
  if (name) problems.push(name);
  if (statics.transactionConnectionName !== undefined && (typeof statics.transactionConnectionName !== 'string' || statics.transactionConnectionName === '')) {
    problems.push(
      `transactionConnectionName must be the connectionName of a ClsPluginTransactional (a non-empty string), got ${describe(statics.transactionConnectionName)}`,
    );
  }
  if (statics.isGlobal !== undefined && typeof statics.isGlobal !== 'boolean') {
    problems.push(`isGlobal must be true or false, got ${describe(statics.isGlobal)}`);
  }
  return problems;
}

/** The table names when every static option is valid; otherwise throws `OutboxOptionsError` naming each bad one. */
export function validateStaticOptions(statics: OutboxModuleStaticOptions): TableNames {
  const problems = staticOptionProblems(statics);
  if (problems.length > 0) throw new OutboxOptionsError(problems);
  return { outbox: statics.tableName ?? DEFAULT_OUTBOX_TABLE, inbox: statics.inboxTableName ?? DEFAULT_INBOX_TABLE };
}

/**
 * Nest instantiates the transport (`useClass`), so it must be a class; its `send` is looked for on
 * the prototype, where a method is, because no instance exists yet.
 */
function transportProblem(option: string, transport: unknown): string | undefined {
  if (transport === undefined) return option === 'transport' ? undefined : `${option} is missing: give the transport's class`;
  const expected = `${option} must be a class implementing OutboxTransport (with a send(message) method), which Nest instantiates`;
  if (typeof transport === 'function') {
    const prototype = (transport as { prototype?: { send?: unknown } }).prototype;
    if (!prototype) return `${expected}; got a function that is not a class (${transport.name || 'anonymous'})`;
    if (typeof prototype.send === 'function') return undefined;
    return `${expected}; class ${transport.name || '(anonymous)'} has no send() method (declare send as a method, not as a property holding a function)`;
  }
  if (transport !== null && typeof transport === 'object') {
    const constructorName = transport.constructor?.name;
    if (constructorName && constructorName !== 'Object') {
      return `${expected}; got an instance of ${constructorName}: pass the class itself (${option}: ${constructorName}) and let Nest create it`;
    }
    return `${expected}; got an object: declare a class with a send(message) method and pass the class`;
  }
  return `${expected}; got ${describe(transport)}`;
}

function describe(value: unknown): string {
  if (typeof value === 'string') return `the string ${JSON.stringify(value)}`;
  if (value === null) return 'null';
  return `${typeof value} ${String(value)}`;
}
