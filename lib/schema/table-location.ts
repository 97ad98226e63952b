import { DataSource } from 'typeorm';
import { TableLocation } from '../dialects/schema-sql';
import { qualifiedTable } from '../dialects/resolve-dialect';

/** Where the library's statements find the table `name` of `dataSource`. */
export function tableLocation(dataSource: DataSource, name: string): TableLocation {
  const schema = (dataSource.driver.options as { schema?: string }).schema;
  return { name, quoted: qualifiedTable(dataSource, name), ...(schema ? { schema } : {}) };
}
