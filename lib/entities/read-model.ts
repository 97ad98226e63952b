import { EntitySchema, EntitySchemaColumnOptions } from 'typeorm';

/** One schema per entity name, so that every caller gets the same object for a table. */
const schemas = new Map<string, EntitySchema<any>>();

/**
 * The read model of table `table`, named `<record>_<table>`: unique per table, so that the tables
 * of several modules can live in one DataSource, and a plain identifier, as TypeORM uses the name
 * as a query alias.
 */
export function readModelOf<T>(record: string, table: string, columns: { [P in keyof T]: EntitySchemaColumnOptions }): EntitySchema<T> {
  const name = `${record}_${table}`;
  let schema = schemas.get(name);
  if (!schema) {
    schema = new EntitySchema<T>({
      name,
      tableName: table,
      // Out of TypeORM's schema diff, which `synchronize` and `migration:generate` both run: the
      // dialects' DDL makes the table, with what no entity can express (partial indexes, SQLite's
      // rowid key, each database's time type).
      synchronize: false,
      columns: readOnly(columns),
    });
    schemas.set(name, schema);
  }
  return schema as EntitySchema<T>;
}

/**
 * Columns TypeORM neither inserts nor updates, so that a write through the read model fails
 * (`insert()`, `update()`, a query builder's `update()`) instead of moving a row past the
 * library's state machine. It cannot stop everything: `save()` of a loaded record writes nothing
 * and says so nowhere, and `delete()` deletes.
 */
function readOnly<C extends Record<string, EntitySchemaColumnOptions>>(columns: C): C {
  return Object.fromEntries(Object.entries(columns).map(([property, column]) => [property, { ...column, insert: false, update: false }])) as C;
}
