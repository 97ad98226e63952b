import type { DatabaseKind } from '../../test/support/database';

/** The databases the write-path and dispatch sections measure, in this order. */
const MEASURED: readonly DatabaseKind[] = ['postgres', 'mariadb'];

/**
 * The databases to measure: all of MEASURED, or the subset named in BENCH_DATABASES
 * (e.g. `BENCH_DATABASES=mariadb`), for re-running one database's rows.
 */
export function benchDatabases(): DatabaseKind[] {
  const only = process.env.BENCH_DATABASES?.split(',').map((s) => s.trim());
  return MEASURED.filter((kind) => !only || only.includes(kind));
}

/** How a database is named in result tables. */
export function databaseLabel(kind: DatabaseKind): string {
  const labels: Record<DatabaseKind, string> = { postgres: 'PostgreSQL', mariadb: 'MariaDB', mysql: 'MySQL', sqlite: 'SQLite' };
  return labels[kind];
}
