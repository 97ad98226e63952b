import { ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import type { OutboxModuleOptionsInput } from '../../lib';
import { sql } from './database';
import type { InboxFixtureConfig } from './inbox-fixture';

const ROOT = resolve(__dirname, '../..');
const FIXTURE = resolve(ROOT, 'test/fixtures/dispatcher-process.ts');

/** What `test/fixtures/dispatcher-process.ts` is started with (JSON, so no functions). */
export interface DispatcherChildConfig {
  schema: string;
  /** Adds `@InboxHandler()` consumers (test/support/inbox-fixture.ts). */
  inbox?: InboxFixtureConfig;
  outbox?: Omit<OutboxModuleOptionsInput, 'isFatalError'>;
  postgresUrl?: string;
  amqpUrl?: string;
}

export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Every child this test process started and has not yet seen exit. */
const running = new Set<ChildApp>();

// Last resort if a test process ends without its afterAll: never leave dispatchers behind.
process.once('exit', () => {
  for (const child of running) child.process.kill('SIGKILL');
});

/**
 * A dispatching application in a real child process. `start()` resolves once it printed
 * READY; `kill('SIGKILL')` is a crash, `stop()` a graceful shutdown.
 */
export class ChildApp {
  readonly exited: Promise<ChildExit>;
  private exit?: ChildExit;
  private out = '';
  private err = '';

  private constructor(
    readonly name: string,
    readonly process: ChildProcess,
  ) {
    this.exited = new Promise((resolveExit) => {
      process.once('exit', (code, signal) => {
        this.exit = { code, signal };
        running.delete(this);
        resolveExit(this.exit);
      });
    });
    process.stdout!.setEncoding('utf8').on('data', (chunk: string) => (this.out += chunk));
    process.stderr!.setEncoding('utf8').on('data', (chunk: string) => (this.err += chunk));
    // The child shuts down when its stdin closes; an EPIPE after it died is expected.
    process.stdin!.on('error', () => undefined);
    if (globalThis.process.env.DEBUG_CHILDREN) {
      process.stdout!.on('data', (chunk: string) => globalThis.process.stdout.write(prefix(name, chunk)));
      process.stderr!.on('data', (chunk: string) => globalThis.process.stderr.write(prefix(name, chunk)));
    }
  }

  /**
   * Spawns `dispatcher-process.ts` and waits for its READY line. `name` also becomes the
   * `application_name` of the child's PostgreSQL sessions.
   */
  static async start(name: string, config: DispatcherChildConfig, readyTimeoutMs = 30_000): Promise<ChildApp> {
    const child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', FIXTURE, JSON.stringify(config)], {
      cwd: ROOT,
      // PGAPPNAME: the child's PostgreSQL sessions carry its name (see `sessionsOf`).
      env: { ...process.env, TS_NODE_PROJECT: resolve(ROOT, 'tsconfig.json'), TS_NODE_TRANSPILE_ONLY: '1', PGAPPNAME: name },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const app = new ChildApp(name, child);
    running.add(app);
    try {
      await app.waitForOutput(/^READY$/m, readyTimeoutMs);
    } catch (error) {
      await app.kill('SIGKILL');
      throw error;
    }
    return app;
  }

  get pid(): number {
    return this.process.pid!;
  }

  get stdout(): string {
    return this.out;
  }

  get stderr(): string {
    return this.err;
  }

  get isRunning(): boolean {
    return this.exit === undefined;
  }

  /** Waits until the child's stdout matches `pattern`; fails early if the child exits. */
  async waitForOutput(pattern: RegExp, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!pattern.test(this.out)) {
      if (this.exit) throw new Error(`${this.name} exited (${describeExit(this.exit)}) before printing ${pattern}${this.diagnostics()}`);
      if (Date.now() > deadline) throw new Error(`${this.name} did not print ${pattern} within ${timeoutMs} ms${this.diagnostics()}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Sends `signal` and resolves once the process is gone. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<ChildExit> {
    if (this.exit) return this.exit;
    this.process.kill(signal);
    return this.exited;
  }

  /** Graceful shutdown (SIGTERM); SIGKILL if it has not exited after `timeoutMs`. */
  async stop(timeoutMs = 20_000): Promise<ChildExit> {
    if (this.exit) return this.exit;
    this.process.kill('SIGTERM');
    const timer = setTimeout(() => this.process.kill('SIGKILL'), timeoutMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  /** The child's output, for failure messages. */
  diagnostics(): string {
    const tail = (text: string) => text.split('\n').slice(-30).join('\n');
    return `\n--- ${this.name} stdout ---\n${tail(this.out)}\n--- ${this.name} stderr ---\n${tail(this.err)}`;
  }
}

/** Kills every child still running (for afterAll/afterEach: runs even when a test failed). */
export async function killAllChildren(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  await Promise.all([...running].map((child) => child.kill(signal)));
}

/**
 * How many PostgreSQL sessions a child (by its name) still has. After a SIGKILL the server
 * may finish a statement the child had sent; once this is 0, nothing of the child can still
 * change a row.
 */
export async function sessionsOf(name: string): Promise<number> {
  const [row] = await sql<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1`, [name]);
  return row.n;
}

function describeExit(exit: ChildExit): string {
  return exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`;
}

function prefix(name: string, chunk: string): string {
  return chunk
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => `[${name}] ${line}\n`)
    .join('');
}
