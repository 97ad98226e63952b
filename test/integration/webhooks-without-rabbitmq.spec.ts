import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { TS_LOADER } from '../support/child-app';
import { testDatabase } from '../support/database';
import { STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS } from '../support/wait';

const ROOT = resolve(__dirname, '../..');
const database = testDatabase('it_webhooks_only');

/** Runs a fixture in a child process to its end: its exit code and output. */
function runFixture(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolveRun) => {
    const child = spawn(process.execPath, ['-r', TS_LOADER, ...args], { cwd: ROOT });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('exit', (code) => resolveRun({ code, stdout, stderr }));
  });
}

describe('an application with webhooks and HTTP delivery only', () => {
  beforeAll(() => database.reset(), timeoutFor(STARTUP_TIMEOUT_MS));

  it(
    'needs neither golevelup nor amqplib installed',
    async () => {
      const run = await runFixture([
        '-r',
        resolve(ROOT, 'test/fixtures/hide-rabbitmq.ts'),
        resolve(ROOT, 'test/fixtures/webhooks-only-process.ts'),
        JSON.stringify({ kind: database.kind, name: database.name }),
      ]);
      expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: expect.not.stringMatching(/golevelup|amqplib|MODULE_NOT_FOUND/) });
      expect(run.stdout).toMatch(/^RABBITMQ_HIDDEN$/m);
      expect(run.stdout).toMatch(/^DELIVERED \{"orderId":77\}$/m);
      expect(Number((await database.sql(`SELECT count(*) AS n FROM {test_effect} WHERE order_id = 77`))[0].n)).toBe(1);
    },
    timeoutFor(STARTUP_TIMEOUT_MS, WAIT_TIMEOUT_MS),
  );
});
