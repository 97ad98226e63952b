/**
 * Runs the library's own transactions on one SQLite connection one after another. On that
 * single connection two of them at once would nest (TypeORM makes the second a savepoint of the
 * first) and commit or roll back together. The application's transactions running concurrently
 * on SQLite through TypeORM interleave in the same way, regardless of this library: SQLite is
 * for development and tests.
 */
export class SqliteTransactionGate {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(work: () => Promise<T>): Promise<T> {
    // Each starts in a later turn of the event loop: SQLite transactions need no network I/O,
    // so back-to-back ones would otherwise keep the process's I/O (broker acks) waiting.
    const start = () => new Promise<void>((resolve) => setImmediate(resolve)).then(work);
    const run = this.tail.then(start, start);
    this.tail = run.catch(() => undefined);
    return run;
  }
}
