import type { StartedTestContainer } from 'testcontainers';

const KEY = Symbol.for('nestjs-outbox-test:mysql8-container');
type Holder = { [KEY]?: StartedTestContainer };

/**
 * The MySQL 8 container the global setup started, for the global teardown. Kept on globalThis:
 * jest loads the two modules separately, in the same process.
 */
export const MYSQL8_CONTAINER = {
  set(container: StartedTestContainer): void {
    (globalThis as Holder)[KEY] = container;
  },
  take(): StartedTestContainer | undefined {
    const container = (globalThis as Holder)[KEY];
    delete (globalThis as Holder)[KEY];
    return container;
  },
};
