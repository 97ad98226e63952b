import { AsyncLocalStorage } from 'node:async_hooks';
import type { QueryRunner } from 'typeorm';
import { DatabaseTimeoutError } from '../errors';

/** The bound, in milliseconds, of every statement `execute` runs in the current call. */
const deadlines = new AsyncLocalStorage<number>();

/**
 * Runs `work` with each statement it runs through `execute` bounded to `timeoutMs` (none when
 * undefined or 0). A request's statements get a bound this way, while the dialects' signatures,
 * which the dispatcher shares, stay as they are.
 */
export function withStatementDeadline<T>(timeoutMs: number | undefined, work: () => Promise<T>): Promise<T> {
  return timeoutMs ? deadlines.run(timeoutMs, work) : work();
}

/** The bound set by `withStatementDeadline` around the current call, if any. */
export function statementDeadline(): number | undefined {
  return deadlines.getStore();
}

/**
 * `query`, or a `DatabaseTimeoutError` once `timeoutMs` pass first. A client-side timer because a
 * server-side one (`statement_timeout`, `max_statement_time`) cannot end a wait for a server that
 * stopped answering, and costs nothing on the wire. On timeout the connection is destroyed: its
 * reply may still come, so it must never carry another statement, and the pool drops it.
 */
export function boundedQuery<T>(runner: QueryRunner, query: Promise<T>, timeoutMs: number): Promise<T> {
  // One promise and one callback pair, not a race of two promises inside an async function: a
  // publish runs this on every statement, and each promise is an async hook call in an application.
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      destroyConnection(runner);
      reject(new DatabaseTimeoutError(timeoutMs));
    }, timeoutMs);
    // Settling again after the timeout is a no-op: the abandoned query's failure is not unhandled.
    query.then(
      (result) => {
        clearTimeout(timer);
        resolve(result);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

/** The parts of TypeORM's query runners and the drivers' connections that close a connection for good. */
interface AbandonableRunner {
  /** pg's Client (its socket in `connection.stream`) or mysql2's PoolConnection; none before one is acquired. */
  databaseConnection?: { connection?: { stream?: { destroy(error?: Error): void } }; destroy?(): void };
  /** TypeORM's PostgreSQL runner: hands the client back to pg-pool, which drops it when given an error. */
  releasePostgresConnection?(error?: Error): Promise<void>;
}

/**
 * Closes the runner's connection without a goodbye to the server, which would wait for an answer
 * too, and takes it out of the pool now: a pool that got it back before the socket's error event
 * could hand it to the next request.
 */
function destroyConnection(runner: QueryRunner): void {
  const abandonable = runner as unknown as AbandonableRunner;
  const connection = abandonable.databaseConnection;
  if (!connection) return;
  const error = new Error('statementTimeoutMs passed');
  if (connection.connection?.stream) {
    connection.connection.stream.destroy(error);
    void abandonable.releasePostgresConnection?.(error).catch(() => undefined);
  } else {
    // mysql2 takes a destroyed connection out of its pool at once.
    connection.destroy?.();
  }
}
