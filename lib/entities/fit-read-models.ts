import type { DataSource } from 'typeorm';
import { OutboxEntityTables, outboxEntities } from './outbox-entities';
import { TIME_PROPERTIES } from './record-columns';
import { recordTimesFor } from './record-times';

/**
 * Fits the read models registered with `dataSource` to its driver's settings: on MariaDB/MySQL
 * their time columns get the transformer that reads the stored UTC times as the right instants,
 * whatever the DataSource's `timezone`, and compares them in `where` as stored (see
 * `record-times.ts`). Call once the DataSource is initialised; the change is to its metadata,
 * this DataSource's alone. Read models not registered with it are skipped; doing it again
 * changes nothing.
 *
 * @returns a warning, when some times cannot be read exactly with the DataSource's settings
 */
export function fitReadModels(dataSource: DataSource, tables: OutboxEntityTables = {}): string | undefined {
  const names = new Set(outboxEntities(tables).map((entity) => entity.options.name));
  // Every metadata of the name: an entity both listed in `entities` and auto-loaded is built twice.
  const registered = dataSource.entityMetadatas.filter((metadata) => names.has(metadata.name));
  const times = recordTimesFor(dataSource.options);
  if (registered.length === 0 || !times.transformer) return undefined;
  for (const column of registered.flatMap((metadata) => metadata.columns)) {
    if (TIME_PROPERTIES.has(column.propertyName)) column.transformer = times.transformer;
  }
  return times.warning;
}
