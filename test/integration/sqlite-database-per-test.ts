import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { DialectTables } from '../support/dialect-tables';
import { openWithTables } from './sqlite-dialect-fixture';

/** A directory of its own under the system's temp directory, for database files. */
function tempDirectory(): { file(name: string): string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), 'nestjs-outbox-sqlite-'));
  return { file: (name) => join(path, name), remove: () => rmSync(path, { recursive: true, force: true }) };
}

/** Where the tests of one `describe` keep their database files. */
export interface DatabaseFiles {
  /** A new file name in the directory (no file yet). */
  newFile(): string;
  /** Opens another file with the tables for the rest of the test, handed to the `opened` callback; closed after the test. */
  openAnother(options?: { timeout?: number }): Promise<void>;
}

/**
 * Gives each test of the calling `describe` a new database file with the library's tables,
 * handed to `opened` before the test. After each test, the DataSources it was given that are still
 * open are closed (a test may close one itself); after the last, the files are removed.
 */
export function newDatabaseForEachTest(opened: (tables: DialectTables) => void): DatabaseFiles {
  let directory: ReturnType<typeof tempDirectory>;
  const openedInTest: DataSource[] = [];
  const newFile = () => directory.file(`${randomUUID()}.sqlite`);
  const open = async (options: { timeout?: number } = {}) => {
    const tables = await openWithTables(newFile(), options);
    openedInTest.push(tables.dataSource);
    opened(tables);
  };

  beforeAll(() => {
    directory = tempDirectory();
  });
  beforeEach(() => open());
  afterEach(async () => {
    for (const dataSource of openedInTest.splice(0)) if (dataSource.isInitialized) await dataSource.destroy();
  });
  afterAll(() => directory.remove());
  return { newFile, openAnother: open };
}
