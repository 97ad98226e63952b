import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Body, Controller, Headers, INestApplication, Post, RawBody, Req, UseGuards } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { InboxWorker } from '../../lib/entries/admin';
import { signWebhook, StandardWebhooksGuard, WebhookInbox, WebhookRequest } from '../../lib/entries/webhooks';
import { testDatabase } from '../support/database';
import { createTestHttpApp, TestEffect } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS, waitUntil } from '../support/wait';

const database = testDatabase('it_webhook_inbox');

/** What the method does, from the request body. */
interface PaymentEvent {
  orderId: number;
  /** Throw on this many first attempts (per message id, counted in this process). */
  failTimes?: number;
  alwaysFail?: boolean;
  /** The business fact, the route's bizKey when present. */
  fact?: string;
  data?: { id?: string };
}

/** Two secrets, as while the first is rotated out. */
const SECRETS = [`whsec_${Buffer.from('old secret of the payments provider').toString('base64')}`, `whsec_${Buffer.from('new secret').toString('base64')}`];

const attempts = new Map<string, number>();
/** What the method saw of the stored request, by message id. */
const seen = new Map<string, { rawBody: string; headers: Record<string, string>; url: string }>();

@Controller('hooks')
class PaymentWebhooks {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  @Post('payments')
  @WebhookInbox({ consumer: 'payments', maxAttempts: 3, type: 'payment.succeeded', bizKey: (request) => (request.body as PaymentEvent).fact })
  async onPayment(@Body() event: PaymentEvent, @Headers('webhook-id') id: string, @RawBody() rawBody: Buffer, @Req() request: WebhookRequest): Promise<void> {
    seen.set(id, { rawBody: rawBody.toString('utf8'), headers: request.headers, url: request.url });
    const attempt = (attempts.get(id) ?? 0) + 1;
    attempts.set(id, attempt);
    if (event.alwaysFail || attempt <= (event.failTimes ?? 0)) throw new Error(`payment failure on attempt ${attempt}`);
    await this.txHost.tx.getRepository(TestEffect).insert({ consumer: 'payments', orderId: event.orderId, messageId: id });
  }

  @Post('signed')
  @UseGuards(StandardWebhooksGuard.for({ secrets: SECRETS }))
  @WebhookInbox({ consumer: 'signed' })
  async onSigned(@Body() event: PaymentEvent, @Headers('webhook-id') id: string): Promise<void> {
    await this.txHost.tx.getRepository(TestEffect).insert({ consumer: 'signed', orderId: event.orderId, messageId: id });
  }

  @Post('shipments')
  @WebhookInbox({ consumer: 'shipments', status: 202, messageId: { bodyField: 'data.id' }, maxBodyBytes: 1_024 })
  async onShipment(@Body() event: PaymentEvent): Promise<void> {
    await this.txHost.tx.getRepository(TestEffect).insert({ consumer: 'shipments', orderId: event.orderId, messageId: event.data?.id ?? null });
  }
}

describe('@WebhookInbox', () => {
  let app: INestApplication;
  let url: string;

  beforeAll(async () => {
    await database.reset();
    ({ app, url } = await createTestHttpApp({
      database,
      outbox: { pollIntervalMs: 50, backoffBaseMs: 100, backoffMaxMs: 200 },
      controllers: [PaymentWebhooks],
    }));
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(async () => {
    await app?.close();
  });

  const send = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${url}/hooks/${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  const pay = (id: string, event: PaymentEvent) => send('payments', event, { 'webhook-id': id });
  const effects = async (consumer: string, orderId: number) =>
    Number((await database.sql(`SELECT count(*) AS n FROM {test_effect} WHERE consumer = ? AND order_id = ?`, [consumer, orderId]))[0].n);
  const inboxRow = async (consumer: string, messageId: string) => {
    const [row] = await database.sql(`SELECT status, attempts, last_error, message_type, biz_key FROM {inbox_message} WHERE consumer = ? AND message_id = ?`, [
      consumer,
      messageId,
    ]);
    return row && { ...row, attempts: Number(row.attempts) };
  };
  const storedRows = async (consumer: string) => Number((await database.sql(`SELECT count(*) AS n FROM {inbox_message} WHERE consumer = ?`, [consumer]))[0].n);

  it(
    'answers 200 once stored, and runs the method later with the request as received',
    async () => {
      const id = `msg_${randomUUID()}`;
      const body = '{"orderId": 1,   "note": "spacing kept"}';
      const response = await send('payments', body, { 'webhook-id': id, 'x-not-kept': 'secret' });
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ received: true });
      await waitUntil(async () => (await inboxRow('payments', id))?.status === 'DONE', 'the stored request is processed');
      expect(await effects('payments', 1)).toBe(1);
      expect(await inboxRow('payments', id)).toMatchObject({ attempts: 0, message_type: 'payment.succeeded' });
      // The bytes as sent, the kept headers only, the path.
      expect(seen.get(id)).toEqual({ rawBody: body, headers: { 'content-type': 'application/json', 'webhook-id': id }, url: '/hooks/payments' });
    },
    timeoutFor(WAIT_TIMEOUT_MS),
  );

  it(
    'applies the effect once for the same webhook sent 3 times in a row and 3 times at once, answering 200 each time',
    async () => {
      const id = `msg_${randomUUID()}`;
      const sequential = [];
      for (let i = 0; i < 3; i++) sequential.push((await pay(id, { orderId: 2 })).status);
      const concurrent = await Promise.all([1, 2, 3].map(async () => (await pay(id, { orderId: 2 })).status));
      expect([...sequential, ...concurrent]).toEqual([200, 200, 200, 200, 200, 200]);
      await waitUntil(async () => (await inboxRow('payments', id))?.status === 'DONE', 'processed');
      // A later webhook, processed after it, shows nothing more of the first is on its way.
      const marker = `msg_${randomUUID()}`;
      await pay(marker, { orderId: 102 });
      await waitUntil(async () => (await inboxRow('payments', marker))?.status === 'DONE', 'a later webhook is processed');
      await app.get(InboxWorker).drain();
      expect(await effects('payments', 2)).toBe(1);
      expect(await storedRows('payments')).toBeGreaterThan(0);
      expect(Number((await database.sql(`SELECT count(*) AS n FROM {inbox_message} WHERE message_id = ?`, [id]))[0].n)).toBe(1);
    },
    timeoutFor(3 * WAIT_TIMEOUT_MS),
  );

  it(
    'stores the same fact sent under a new id once, by type and bizKey',
    async () => {
      const fact = `order-3:${randomUUID()}`;
      const first = `msg_${randomUUID()}`;
      expect((await pay(first, { orderId: 3, fact })).status).toBe(200);
      expect((await pay(`msg_${randomUUID()}`, { orderId: 3, fact })).status).toBe(200);
      await waitUntil(async () => (await inboxRow('payments', first))?.status === 'DONE', 'processed');
      await app.get(InboxWorker).drain();
      expect(await effects('payments', 3)).toBe(1);
      expect(Number((await database.sql(`SELECT count(*) AS n FROM {inbox_message} WHERE biz_key = ?`, [fact]))[0].n)).toBe(1);
    },
    timeoutFor(WAIT_TIMEOUT_MS),
  );

  it(
    'retries a failing method with backoff, commits nothing of the failed attempts, and gives up after maxAttempts',
    async () => {
      const flaky = `msg_${randomUUID()}`;
      const broken = `msg_${randomUUID()}`;
      await pay(flaky, { orderId: 4, failTimes: 2 });
      await pay(broken, { orderId: 5, alwaysFail: true });
      await waitUntil(async () => (await inboxRow('payments', flaky))?.status === 'DONE', 'processed on the third attempt');
      expect(await inboxRow('payments', flaky)).toMatchObject({ attempts: 2 });
      expect(await effects('payments', 4)).toBe(1);
      await waitUntil(async () => (await inboxRow('payments', broken))?.status === 'MANUAL_REQUIRED', 'given up');
      expect(await inboxRow('payments', broken)).toMatchObject({ attempts: 3, last_error: expect.stringMatching(/payment failure on attempt 3/) });
      expect(await effects('payments', 5)).toBe(0);
    },
    timeoutFor(2 * WAIT_TIMEOUT_MS),
  );

  it(
    'takes the id from a body field and answers the configured 202',
    async () => {
      const id = `shp_${randomUUID()}`;
      const response = await send('shipments', { orderId: 6, data: { id } });
      expect(response.status).toBe(202);
      await waitUntil(async () => (await inboxRow('shipments', id))?.status === 'DONE', 'processed');
      expect(await effects('shipments', 6)).toBe(1);
    },
    timeoutFor(WAIT_TIMEOUT_MS),
  );

  it(
    'answers 400 and stores nothing for a request without an id or with a body that is not JSON',
    async () => {
      const before = await storedRows('payments');
      const noId = await send('payments', { orderId: 7 });
      expect(noId.status).toBe(400);
      expect(((await noId.json()) as { message: string }).message).toMatch(/no message id \(from header "webhook-id"\)/);
      expect((await send('payments', '{"orderId": 7', { 'webhook-id': `msg_${randomUUID()}` })).status).toBe(400);
      expect((await send('shipments', { orderId: 7, data: { id: { nested: true } } })).status).toBe(400);
      expect((await send('payments', { orderId: 7 }, { 'webhook-id': 'x'.repeat(256) })).status).toBe(400);
      expect(await storedRows('payments')).toBe(before);
    },
    timeoutFor(WAIT_TIMEOUT_MS),
  );

  it(
    'answers 415 and stores nothing for a body of a type the application has no parser for, rather than an empty body',
    async () => {
      const before = await storedRows('payments');
      for (const contentType of ['text/plain', 'application/xml', 'application/cloudevents+json']) {
        const response = await fetch(`${url}/hooks/payments`, {
          method: 'POST',
          headers: { 'content-type': contentType, 'webhook-id': `msg_${randomUUID()}` },
          body: '{"orderId": 15}',
        });
        expect(response.status).toBe(415);
        expect(((await response.json()) as { message: string }).message).toMatch(/app\.useBodyParser/);
      }
      expect(await storedRows('payments')).toBe(before);
    },
    timeoutFor(WAIT_TIMEOUT_MS),
  );

  it(
    "answers 413 and stores nothing for a body over the route's limit",
    async () => {
      const id = `shp_${randomUUID()}`;
      const response = await send('shipments', { orderId: 8, data: { id }, padding: 'x'.repeat(1_024) });
      expect(response.status).toBe(413);
      expect(await inboxRow('shipments', id)).toBeUndefined();
    },
    timeoutFor(WAIT_TIMEOUT_MS),
  );

  it(
    'stores a request signed with either rotated secret, and answers 401 and stores nothing for a bad, expired or replayed signature',
    async () => {
      const signed = (id: string, body: string, secret: string, timestamp = Math.floor(Date.now() / 1000)) =>
        send('signed', body, {
          'webhook-id': id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signWebhook({ id, timestamp, body, secret }),
        });
      const [oldId, newId] = [`msg_${randomUUID()}`, `msg_${randomUUID()}`];
      expect((await signed(oldId, '{"orderId": 10}', SECRETS[0])).status).toBe(200);
      expect((await signed(newId, '{"orderId": 11}', SECRETS[1])).status).toBe(200);
      const foreign = `whsec_${Buffer.from('somebody else').toString('base64')}`;
      const refused = [
        await signed(`msg_${randomUUID()}`, '{"orderId": 12}', foreign),
        // Signed for another body: the one sent was changed on the way.
        await send('signed', '{"orderId": 13}', {
          'webhook-id': 'msg_x',
          'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
          'webhook-signature': signWebhook({ id: 'msg_x', timestamp: Math.floor(Date.now() / 1000), body: '{"orderId": 1}', secret: SECRETS[1] }),
        }),
        // A captured request replayed an hour later.
        await signed(`msg_${randomUUID()}`, '{"orderId": 14}', SECRETS[1], Math.floor(Date.now() / 1000) - 3_600),
      ];
      expect(refused.map((response) => response.status)).toEqual([401, 401, 401]);
      await waitUntil(async () => (await inboxRow('signed', newId))?.status === 'DONE', 'the signed requests are processed');
      await waitUntil(async () => (await inboxRow('signed', oldId))?.status === 'DONE', 'the signed requests are processed');
      expect(await storedRows('signed')).toBe(2);
    },
    timeoutFor(2 * WAIT_TIMEOUT_MS),
  );

  it(
    'answers 503 with Retry-After when the request cannot be stored, and 200 to the retry once it can',
    async () => {
      const id = `msg_${randomUUID()}`;
      await database.sql(`ALTER TABLE {inbox_message} RENAME TO inbox_message_away`);
      let refused: Response;
      try {
        refused = await pay(id, { orderId: 9 });
      } finally {
        await database.sql(`ALTER TABLE ${database.kind === 'postgres' ? `"${database.name}".` : ''}inbox_message_away RENAME TO inbox_message`);
      }
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(await inboxRow('payments', id)).toBeUndefined();
      expect((await pay(id, { orderId: 9 })).status).toBe(200);
      await waitUntil(async () => (await inboxRow('payments', id))?.status === 'DONE', 'the retry is processed');
      expect(await effects('payments', 9)).toBe(1);
    },
    timeoutFor(WAIT_TIMEOUT_MS),
  );
});
