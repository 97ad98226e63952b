import type { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';

const GUARDED = Symbol('nestjs-outbox:pg-connection-guard');

interface EventSource {
  on(event: string, listener: (...args: any[]) => void): unknown;
}

/**
 * Keeps a connection terminated while it is being opened from ending the process. pg-pool hands a
 * new connection over from inside the socket read that completed its start-up, and TypeORM
 * attaches its 'error' listener one microtask later; when the server's termination notice (a
 * restart, `pg_terminate_backend`, a failover) arrives in the same read, pg emits 'error' with no
 * listener, which Node turns into an uncaught exception. Every connection gets a listener of its
 * own from the start; the pool's and TypeORM's still see every error and discard the connection.
 */
export function guardPostgresConnections(dataSource: DataSource): void {
  const pool = (dataSource.driver as PostgresDriver & { master?: EventSource & { [GUARDED]?: true } }).master;
  if (!pool || pool[GUARDED]) return;
  pool[GUARDED] = true;
  pool.on('connect', (connection: EventSource) => connection.on('error', ignoreHandledElsewhere));
}

function ignoreHandledElsewhere(): void {
  // The error also reaches the pool or TypeORM whenever they listen; nothing to add here.
}
