import { ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import type { OutboxModuleOptionsInput } from '../../lib';
import { testDatabase, type DatabaseKind } from './database';
import { prepareSessionIdentity } from './database-sessions';
import type { FlakySendsConfig } from './flaky-transport';
import type { InboxFixtureConfig } from './inbox-fixture';
import { STARTUP_TIMEOUT_MS, WAIT_TIMEOUT_MS } from './wait';

const ROOT = resolve(__dirname, '../..');
const FIXTURE = resolve(ROOT, 'test/fixtures/dispatcher-process.ts');
const SKEW_CLOCK = resolve(ROOT, 'test/fixtures/skew-clock.ts');
/** The `.ts` loader child processes start with (`-r`): ts-node's transpile-only output, kept on disk (see the file). */
export const TS_LOADER = resolve(ROOT, 'test/support/cached-transpile.js');
/** The variable `skew-clock.ts` reads the skew from. */
const CLOCK_SKEW_ENV = 'TEST_CLOCK_SKEW_MS';

/**
 * Longest `stop()` waits before it kills. Longer than the child's own bound on closing
 * (CLOSE_TIMEOUT_MS in dispatcher-process.ts), so that a slow close is reported by the child,
 * with its reason, rather than cut short by our SIGKILL.
 */
export const STOP_TIMEOUT_MS = 60_000;

/** What `test/fixtures/dispatcher-process.ts` is started with (JSON, so no functions). */
export interface DispatcherChildConfig {
  /** The test file's database (`TestDatabase.kind` and `.name`). */
  database: { kind: DatabaseKind; name: string };
  /** Adds `@InboxHandler()` consumers (test/support/inbox-fixture.ts). */
  inbox?: InboxFixtureConfig;
  outbox?: Omit<OutboxModuleOptionsInput, 'isFatalError'>;
  /** The broker's URI, or the URIs of a cluster's nodes (tried in turn on each reconnection). */
  amqpUrl?: string | string[];
  /** Seconds between the child's attempts to reconnect to the broker (amqp-connection-manager's default: 5). */
  amqpReconnectSeconds?: number;
  /** Sends through the RabbitMQ transport with failures injected (test/support/flaky-transport.ts). */
  flakySends?: FlakySendsConfig;
  /**
   * Publishes on command: a line `PUBLISH <n>` on the child's stdin makes it publish n messages of
   * `type` to `exchange`, each in a transaction of its own, and print `PUBLISHED <ids as JSON>`
   * once all committed, or `PUBLISH FAILED <reason>` at the first that did not (see `ChildApp.publish`).
   */
  publisher?: { exchange: string; type: string };
  /**
   * Publishes continuously from start-up: `perSecond` messages of `type` to `exchange` a second,
   * each in a transaction of its own (as a service taking requests), until a line `PAUSE` on stdin
   * makes it stop and print `PAUSED` once its last transaction ended. Failures are printed on
   * stderr and do not stop it. The payloads are `{ orderId }`, counting up from `firstOrderId`
   * (the inbox fixture's handler derives business keys from it: give each child its own range).
   */
  steadyPublisher?: { exchange: string; type: string; perSecond: number; firstOrderId: number };
  /**
   * Serves HTTP on a free port of 127.0.0.1 (`ChildApp.url`) with a route `POST /orders` that pays
   * an order and publishes `order.paid` to `exchange` in one transaction, answering
   * `{ orderId, messageId }` (test/fixtures/orders-route.ts).
   */
  ordersRoute?: { exchange: string };
  /**
   * Reports its memory after a full garbage collection on command, and writes heap snapshots
   * (`ChildApp.memory`; test/fixtures/memory-reports.ts). Needs `--expose-gc` in CHILD_NODE_FLAGS.
   */
  memoryReports?: boolean;
  /** Shifts the child's JavaScript clock (`Date.now()`, `new Date()`) by this much, as a server whose clock is off. */
  clockSkewMs?: number;
  /** The name the database knows the child's sessions by; `ChildApp.start` sets it to the child's name. */
  sessionName?: string;
  /**
   * Registers an OpenTelemetry SDK (metrics and traces, discarding exporters:
   * test/support/opentelemetry-sdk.ts) before the app is created, as an application would.
   */
  openTelemetry?: boolean;
}

/** A child's memory after a full garbage collection, in bytes (`ChildApp.memory`). */
export interface ChildMemory {
  /** V8's `used_heap_size`: what the JavaScript heap retains. */
  usedHeapSize: number;
  rss: number;
  /** Memory of C++ objects bound to JavaScript ones, `arrayBuffers` included. */
  external: number;
  arrayBuffers: number;
  /** How long the garbage collections took (the process stops meanwhile). */
  collectMs: number;
  /** Where the heap snapshot was written, when one was asked for. */
  snapshot?: string;
  /** How long writing it took (the process stops meanwhile). */
  snapshotMs?: number;
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
   * Spawns `dispatcher-process.ts` and waits for its READY line. `name` is also what the
   * database knows the child's sessions by (see `sessionsOf` in database-sessions.ts).
   */
  static async start(name: string, config: DispatcherChildConfig, readyTimeoutMs = STARTUP_TIMEOUT_MS): Promise<ChildApp> {
    await prepareSessionIdentity(testDatabase(config.database.name, config.database.kind), name);
    const skewed = config.clockSkewMs !== undefined;
    // The clock is shifted before anything else loads, so no module keeps the true time.
    const preload = ['-r', TS_LOADER, ...(skewed ? ['-r', SKEW_CLOCK] : [])];
    // A whole TestDatabase may be passed as `database`: only its kind and name travel.
    const { kind, name: databaseName } = config.database;
    const json = JSON.stringify({ sessionName: name, ...config, database: { kind, name: databaseName } });
    // e.g. CHILD_NODE_FLAGS='--cpu-prof --cpu-prof-dir=/tmp/profiles' to profile the dispatchers of a benchmark.
    const flags = process.env.CHILD_NODE_FLAGS?.split(' ').filter(Boolean) ?? [];
    const child = spawn(process.execPath, [...flags, ...preload, FIXTURE, json], {
      cwd: ROOT,
      env: { ...process.env, ...(skewed ? { [CLOCK_SKEW_ENV]: String(config.clockSkewMs) } : {}) },
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

  /** Resolves once the child exits by itself (a crash it was set up for); fails after `timeoutMs`. */
  async waitForExit(timeoutMs = WAIT_TIMEOUT_MS): Promise<ChildExit> {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${this.name} did not exit within ${timeoutMs} ms${this.diagnostics()}`)), timeoutMs);
    });
    try {
      return await Promise.race([this.exited, timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The base URL the child serves HTTP on (`DispatcherChildConfig.ordersRoute`). */
  get url(): string {
    const listening = /^LISTENING (\S+)$/m.exec(this.out);
    if (!listening) throw new Error(`${this.name} serves no HTTP: start it with ordersRoute`);
    return listening[1];
  }

  /** Has the child publish `count` messages (`DispatcherChildConfig.publisher`); resolves with their ids once committed. */
  async publish(count: number, timeoutMs = WAIT_TIMEOUT_MS): Promise<string[]> {
    const [outcome, rest] = await this.command(`PUBLISH ${count}`, /^(PUBLISHED|PUBLISH FAILED) (.*)$/m, timeoutMs);
    if (outcome === 'PUBLISH FAILED') throw new Error(`${this.name} could not publish: ${rest}`);
    return JSON.parse(rest) as string[];
  }

  /**
   * The child's memory after a full garbage collection (`DispatcherChildConfig.memoryReports`);
   * with `snapshotPath`, it also writes a V8 heap snapshot there.
   */
  async memory(snapshotPath?: string, timeoutMs = WAIT_TIMEOUT_MS): Promise<ChildMemory> {
    const [outcome, rest] = await this.command(snapshotPath ? `MEMORY ${snapshotPath}` : 'MEMORY', /^(MEMORY|MEMORY FAILED) (.*)$/m, timeoutMs);
    if (outcome === 'MEMORY FAILED') throw new Error(`${this.name} could not report its memory: ${rest}`);
    return JSON.parse(rest) as ChildMemory;
  }

  /** Writes `line` on the child's stdin and resolves with the groups of the first answer matching `answer` after it. */
  private async command(line: string, answer: RegExp, timeoutMs: number): Promise<string[]> {
    const before = this.out.length;
    this.process.stdin!.write(`${line}\n`);
    // Only this command's answer: an earlier line of the same kind is not it.
    const match = () => answer.exec(this.out.slice(before));
    const deadline = Date.now() + timeoutMs;
    while (!match()) {
      if (this.exit) throw new Error(`${this.name} exited (${describeExit(this.exit)}) before answering ${line}${this.diagnostics()}`);
      if (Date.now() > deadline) throw new Error(`${this.name} did not answer ${line} within ${timeoutMs} ms${this.diagnostics()}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    return match()!.slice(1);
  }

  /** Sends `signal` and resolves once the process is gone. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<ChildExit> {
    if (this.exit) return this.exit;
    this.process.kill(signal);
    return this.exited;
  }

  /** Graceful shutdown (SIGTERM); SIGKILL if it has not exited after `timeoutMs`. */
  async stop(timeoutMs = STOP_TIMEOUT_MS): Promise<ChildExit> {
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
