import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Body, Controller, Headers, INestApplication, Post } from '@nestjs/common';
import { ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { InboxWorker } from '../../lib/entries/admin';
import { WebhookInbox } from '../../lib/entries/webhooks';
import type { WebhookChildConfig } from '../fixtures/webhook-process';
import { ChildExit, TS_LOADER } from '../support/child-app';
import { testDatabase } from '../support/database';
import { createTestHttpApp, TestEffect } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS, waitUntil } from '../support/wait';

const database = testDatabase('it_webhook_crash');

const ROOT = resolve(__dirname, '../..');
const FIXTURE = resolve(ROOT, 'test/fixtures/webhook-process.ts');

/** The service after its restart: the route and consumer of `DyingPaymentWebhooks` in webhook-process.ts, without the crash. */
@Controller('hooks')
class PaymentWebhooks {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  @Post('payments')
  @WebhookInbox({ consumer: 'payments' })
  async onPayment(@Body() event: { orderId: number }, @Headers('webhook-id') id: string): Promise<void> {
    await this.txHost.tx.getRepository(TestEffect).insert({ consumer: 'payments', orderId: event.orderId, messageId: id });
  }
}

/** `webhook-process.ts` running in a process of its own, serving on `url`. */
interface WebhookChild {
  url: string;
  exited: Promise<ChildExit>;
  process: ChildProcess;
  /** Its output, for failure messages. */
  diagnostics(): string;
}

const children = new Set<ChildProcess>();

// Last resort if the test process ends without its afterEach.
process.once('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

/** Spawns `webhook-process.ts` as dispatcher children are spawned (child-app.ts), and waits until it listens. */
async function startWebhookChild(config: WebhookChildConfig): Promise<WebhookChild> {
  const child = spawn(process.execPath, ['-r', TS_LOADER, FIXTURE, JSON.stringify(config)], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.add(child);
  let [out, err] = ['', ''];
  let exit: ChildExit | undefined;
  const exited = new Promise<ChildExit>((resolveExit) =>
    child.once('exit', (code, signal) => {
      children.delete(child);
      resolveExit((exit = { code, signal }));
    }),
  );
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  child.stdin.on('error', () => undefined);
  const diagnostics = () => `\n--- webhook-process stdout ---\n${out.slice(-3_000)}\n--- webhook-process stderr ---\n${err.slice(-3_000)}`;
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  for (;;) {
    const listening = /^LISTENING (\S+)$/m.exec(out);
    if (listening) return { url: listening[1], exited, process: child, diagnostics };
    const failure = exit ? `exited (${JSON.stringify(exit)})` : Date.now() > deadline ? `did not listen within ${STARTUP_TIMEOUT_MS} ms` : undefined;
    if (failure) {
      child.kill('SIGKILL');
      throw new Error(`webhook-process ${failure}${diagnostics()}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('@WebhookInbox and a crash between storing a request and answering it (real processes)', () => {
  let app: INestApplication | undefined;

  beforeAll(() => database.reset());

  afterEach(async () => {
    const killed = [...children].map((child) => new Promise((gone) => child.once('exit', gone)));
    for (const child of children) child.kill('SIGKILL');
    await Promise.all(killed);
  });

  afterAll(async () => {
    await app?.close();
  });

  const send = (url: string, id: string, body: string) =>
    fetch(`${url}/hooks/payments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'webhook-id': id },
      body,
      signal: AbortSignal.timeout(WAIT_TIMEOUT_MS),
    });
  const inboxRow = async (messageId: string) => {
    const [row] = await database.sql(`SELECT status, attempts FROM {inbox_message} WHERE consumer = ? AND message_id = ?`, ['payments', messageId]);
    return row && { ...row, attempts: Number(row.attempts) };
  };
  const count = async (table: string, messageId: string) =>
    Number((await database.sql(`SELECT count(*) AS n FROM {${table}} WHERE message_id = ?`, [messageId]))[0].n);

  it(
    'answers 200 to the resend of a request stored just before the crash, and applies its effect once',
    async () => {
      const crashing = await startWebhookChild({ database: { kind: database.kind, name: database.name } });
      const id = `msg_${randomUUID()}`;
      const body = JSON.stringify({ orderId: 1 });

      // The sender gets no answer: the connection closes under it.
      const failure = (await send(crashing.url, id, body).then(
        (response) => new Error(`answered ${response.status}${crashing.diagnostics()}`),
        (error: unknown) => error,
      )) as Error & { cause?: { code?: string } };
      // fetch's TypeError is of Node's realm, not jest's: compared by name.
      expect({ name: failure.name, message: failure.message }).toEqual({ name: 'TypeError', message: 'fetch failed' });
      expect(failure.cause?.code).toMatch(/^(UND_ERR_SOCKET|ECONNRESET)$/);
      expect(await crashing.exited).toEqual({ code: null, signal: 'SIGKILL' });
      // The process died after the row committed; nothing ran it (the child runs no inbox worker).
      expect(await inboxRow(id)).toMatchObject({ status: 'PENDING', attempts: 0 });
      expect(await count('test_effect', id)).toBe(0);

      // The service restarts, and the sender, having had no answer, sends the webhook again.
      let url: string;
      ({ app, url } = await createTestHttpApp({ database, outbox: { pollIntervalMs: 50 }, controllers: [PaymentWebhooks] }));
      const resent = await send(url, id, body);
      expect(resent.status).toBe(200);
      expect(await resent.json()).toEqual({ received: true });
      await waitUntil(async () => (await inboxRow(id))?.status === 'DONE', 'the stored request is processed');

      // A later webhook, processed after it, shows nothing more of the first is on its way.
      const marker = `msg_${randomUUID()}`;
      expect((await send(url, marker, JSON.stringify({ orderId: 2 }))).status).toBe(200);
      await waitUntil(async () => (await inboxRow(marker))?.status === 'DONE', 'a later webhook is processed');
      await app.get(InboxWorker).drain();
      expect(await count('test_effect', id)).toBe(1);
      expect(await count('inbox_message', id)).toBe(1);
      expect(await inboxRow(id)).toEqual({ status: 'DONE', attempts: 0 });
    },
    timeoutFor(2 * STARTUP_TIMEOUT_MS, 4 * WAIT_TIMEOUT_MS),
  );
});
