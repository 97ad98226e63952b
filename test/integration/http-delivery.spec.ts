import { INestApplicationContext } from '@nestjs/common';
import { createServer, IncomingHttpHeaders, Server, ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import { AddressInfo } from 'node:net';
import { DataSource } from 'typeorm';
import { OutboxService } from '../../lib';
import { OutboxDispatcher } from '../../lib/entries/admin';
import { HttpOutboxTransport } from '../../lib/entries/transports';
import { verifyWebhook } from '../../lib/entries/webhooks';
import { testDatabase } from '../support/database';
import { createTestApp, OrderPayments } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS, waitUntil } from '../support/wait';

const database = testDatabase('it_http_delivery');
const SECRET = `whsec_${Buffer.from('secret shared with the logistics partner').toString('base64')}`;
/** Longer than any endpoint's timeout, which must stay below it. */
const SEND_TIMEOUT_MS = 5_000;
/** Every endpoint but the hung one: generous, so that a loaded machine never turns an answer into a timeout. */
const ENDPOINT_TIMEOUT_MS = 3_000;
const HUNG_TIMEOUT_MS = 500;

/** A request as the test's server received it. */
interface Received {
  path: string;
  method: string;
  headers: IncomingHttpHeaders;
  /** The bytes as they came off the wire. */
  body: Buffer;
  /** performance.now() when the body had arrived. */
  at: number;
  /** performance.now() when the connection closed under a request never answered. */
  closedAt?: number;
}

/** How the server answers one request. */
type Answer = (response: ServerResponse) => void;

const answer =
  (status: number, body = '', headers: Record<string, string> = {}): Answer =>
  (response) => {
    response.writeHead(status, { 'content-type': 'text/plain', ...headers });
    response.end(body);
  };
const OK = answer(200, 'ok');
/** Leaves the request unanswered, its connection open, until the client gives up. */
const NEVER: Answer = () => undefined;

/**
 * The receiving side, owned by the test: a node:http server on 127.0.0.1 that records every
 * request and answers each path as the test scripts it (200 once a path's script runs out).
 */
class ScriptedReceiver {
  readonly received: Received[] = [];
  private readonly scripts = new Map<string, Answer[]>();
  private readonly thereafter = new Map<string, Answer>();

  private constructor(private readonly server: Server) {}

  static async start(): Promise<ScriptedReceiver> {
    const server = createServer();
    const receiver = new ScriptedReceiver(server);
    server.on('request', (request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const path = request.url ?? '';
        const received: Received = { path, method: request.method ?? '', headers: request.headers, body: Buffer.concat(chunks), at: performance.now() };
        receiver.received.push(received);
        response.on('close', () => (received.closedAt ??= performance.now()));
        const next = receiver.scripts.get(path)?.shift() ?? receiver.thereafter.get(path) ?? OK;
        next(response);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** The next requests to `path` get these answers, in order; later ones get `then`. */
  script(path: string, answers: Answer[], then: Answer = OK): void {
    this.scripts.set(path, [...answers]);
    this.thereafter.set(path, then);
  }

  /** The requests carrying this message id, in the order they arrived. */
  attemptsOf(messageId: string): Received[] {
    return this.received.filter((request) => request.headers['webhook-id'] === messageId);
  }

  to(path: string): Received[] {
    return this.received.filter((request) => request.path === path);
  }

  async close(): Promise<void> {
    // Hung requests and the client's keep-alive connections would hold close() open.
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

interface MessageRow {
  status: string;
  attempts: number;
  lastError: string | null;
}

describe('HTTP delivery', () => {
  let receiver: ScriptedReceiver;
  let app: INestApplicationContext;
  let payments: OrderPayments;

  beforeAll(async () => {
    await database.reset();
    receiver = await ScriptedReceiver.start();
    const endpoint = (path: string) => ({ url: `${receiver.url}${path}`, timeoutMs: ENDPOINT_TIMEOUT_MS });
    const transport = HttpOutboxTransport.for({
      endpoints: {
        billing: { ...endpoint('/billing'), headers: { authorization: 'Bearer billing-token', 'X-Tenant': 'acme' } },
        flaky: endpoint('/flaky'),
        throttled: endpoint('/throttled'),
        gone: endpoint('/gone'),
        hung: { ...endpoint('/hung'), timeoutMs: HUNG_TIMEOUT_MS },
        healthy: endpoint('/healthy'),
        moved: endpoint('/moved'),
        logistics: { ...endpoint('/logistics'), secret: SECRET },
        audit: endpoint('/audit'),
        outage: endpoint('/outage'),
      },
    });
    app = await createTestApp({
      database,
      statics: { transport },
      outbox: { pollIntervalMs: 50, backoffBaseMs: 100, backoffMaxMs: 200, sendTimeoutMs: SEND_TIMEOUT_MS },
    });
    payments = app.get(OrderPayments);
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(async () => {
    await app?.close();
    await receiver?.close();
  });

  async function row(messageId: string): Promise<MessageRow> {
    const [found] = await database.sql(`SELECT status, attempts, last_error FROM {outbox_message} WHERE message_id = ?`, [messageId]);
    return { status: found.status, attempts: Number(found.attempts), lastError: found.last_error };
  }

  async function settled(messageId: string, status: 'DONE' | 'MANUAL_REQUIRED', timeoutMs = WAIT_TIMEOUT_MS): Promise<MessageRow> {
    await waitUntil(async () => (await row(messageId)).status === status, `message ${messageId} is ${status}`, timeoutMs);
    return row(messageId);
  }

  /** Publishes to `endpoint` in a transaction of its own, with the given attempt limit. */
  async function publish(endpoint: string, payload: object, maxAttempts?: number): Promise<string> {
    const outbox = app.get(OutboxService);
    const { messageId } = await app
      .get(DataSource)
      .transaction((manager) => outbox.publish({ type: 'order.paid', destination: endpoint, payload, maxAttempts }, { manager }));
    return messageId;
  }

  it(
    'POSTs the payload as JSON with the message id as webhook-id and Idempotency-Key, and marks it DONE',
    async () => {
      const before = Math.floor(Date.now() / 1_000);
      const { messageId, order } = await payments.pay('billing');
      expect(await settled(messageId, 'DONE')).toEqual({ status: 'DONE', attempts: 0, lastError: null });
      const [request] = receiver.attemptsOf(messageId);
      expect(receiver.attemptsOf(messageId)).toHaveLength(1);
      expect(request).toMatchObject({ method: 'POST', path: '/billing' });
      expect(JSON.parse(request.body.toString('utf8'))).toEqual({ orderId: order.id });
      expect(request.headers).toMatchObject({
        'content-type': 'application/json',
        'webhook-id': messageId,
        'idempotency-key': messageId,
        authorization: 'Bearer billing-token',
        'x-tenant': 'acme',
      });
      expect(Number(request.headers['webhook-timestamp'])).toBeGreaterThanOrEqual(before);
      expect(Number(request.headers['webhook-timestamp'])).toBeLessThanOrEqual(Math.ceil(Date.now() / 1_000));
      // No secret on this endpoint: nothing claims to be signed.
      expect(request.headers['webhook-signature']).toBeUndefined();
    },
    timeoutFor(WAIT_TIMEOUT_MS),
  );

  it(
    'retries a 503 and delivers on the next attempt, with the same webhook-id on both',
    async () => {
      receiver.script('/flaky', [answer(503, 'maintenance')]);
      const { messageId } = await payments.pay('flaky');
      expect(await settled(messageId, 'DONE')).toEqual({ status: 'DONE', attempts: 1, lastError: null });
      const requests = receiver.attemptsOf(messageId);
      expect(requests.map((request) => request.headers['idempotency-key'])).toEqual([messageId, messageId]);
      // The attempt number counts up; the publish time stays the message's.
      expect(requests.map((request) => request.headers['outbox-attempt'])).toEqual(['1', '2']);
      expect(requests[0].headers['outbox-published-at']).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(requests[1].headers['outbox-published-at']).toBe(requests[0].headers['outbox-published-at']);
      expect(requests[0].body.equals(requests[1].body)).toBe(true);
    },
    timeoutFor(WAIT_TIMEOUT_MS),
  );

  it(
    'waits as long as Retry-After asks before the next attempt, though the backoff is 100 ms',
    async () => {
      receiver.script('/throttled', [answer(503, 'slow down', { 'retry-after': '2' })]);
      const { messageId } = await payments.pay('throttled');
      // Read in one query while the row waits for its retry: DONE clears last_error.
      let waiting: MessageRow | undefined;
      await waitUntil(async () => (waiting = await row(messageId)).attempts === 1, 'the first attempt failed');
      expect(waiting).toMatchObject({ status: 'FAILED', lastError: expect.stringContaining('HTTP 503: slow down (Retry-After: 2)') });
      expect(await settled(messageId, 'DONE')).toMatchObject({ status: 'DONE', attempts: 1 });
      const [first, second] = receiver.attemptsOf(messageId);
      expect(second.at - first.at).toBeGreaterThanOrEqual(2_000);
    },
    timeoutFor(2 * WAIT_TIMEOUT_MS),
  );

  it(
    'sends a 410 to MANUAL_REQUIRED at once, with the status and the start of the body',
    async () => {
      receiver.script('/gone', [], answer(410, `order is gone for good\n${'x'.repeat(5_000)}`));
      const { messageId } = await payments.pay('gone');
      const failed = await settled(messageId, 'MANUAL_REQUIRED');
      expect(failed.attempts).toBe(1);
      expect(failed.lastError).toMatch(/^NonRetryableError: endpoint "gone" answered HTTP 410: order is gone for good\\u000axxx/);
      expect(failed.lastError!.length).toBeLessThan(600);
      expect(receiver.attemptsOf(messageId)).toHaveLength(1);
    },
    timeoutFor(WAIT_TIMEOUT_MS),
  );

  it(
    'fails an attempt that gets no answer within the endpoint timeout, and keeps delivering to other endpoints',
    async () => {
      receiver.script('/hung', [], NEVER);
      const messageId = await publish('hung', { n: 1 }, 3);
      await waitUntil(() => receiver.attemptsOf(messageId).length >= 1, 'the hung endpoint has the first attempt');

      // While the endpoint hangs, a message to another endpoint goes through.
      const { messageId: healthy } = await payments.pay('healthy');
      expect(await settled(healthy, 'DONE')).toMatchObject({ status: 'DONE', attempts: 0 });

      // The second attempt comes once the first was recorded as failed (only FAILED rows are claimed again).
      await waitUntil(() => receiver.attemptsOf(messageId).length >= 2, 'the hung endpoint has the second attempt');
      const retried = await row(messageId);
      expect(retried.attempts).toBeGreaterThanOrEqual(1);
      expect(retried.lastError).toContain('endpoint "hung" did not answer within 500 ms');

      const given = await settled(messageId, 'MANUAL_REQUIRED');
      expect(given).toMatchObject({ status: 'MANUAL_REQUIRED', attempts: 3 });
      expect(given.lastError).toMatch(/^Error: endpoint "hung" did not answer within 500 ms <- caused by .*TimeoutError/);
      const attempts = receiver.attemptsOf(messageId);
      expect(attempts).toHaveLength(3);
      // The client gave up on each request, long before sendTimeoutMs: the errors above name the
      // endpoint's timeout as the cause. (No lower bound: the receiver stamps a request when it
      // reads it, which on a loaded machine can be well after the client's timer started.)
      await waitUntil(() => attempts.every((attempt) => attempt.closedAt !== undefined), 'every hung request was abandoned by the client');
      for (const attempt of attempts) expect(attempt.closedAt! - attempt.at).toBeLessThan(SEND_TIMEOUT_MS - 500);
    },
    timeoutFor(4 * WAIT_TIMEOUT_MS),
  );

  it(
    'does not follow a redirect: the message goes to MANUAL_REQUIRED and the target is never asked',
    async () => {
      receiver.script('/moved', [], answer(302, 'see elsewhere', { location: `${receiver.url}/moved-target` }));
      const { messageId } = await payments.pay('moved');
      const failed = await settled(messageId, 'MANUAL_REQUIRED');
      expect(failed.attempts).toBe(1);
      expect(failed.lastError).toContain('endpoint "moved" answered HTTP 302: see elsewhere (redirects are not followed: configure the final URL)');
      // fetch follows a redirect before it resolves, and the row is settled after: a followed
      // redirect would have reached the target by now.
      expect(receiver.to('/moved-target')).toEqual([]);
      expect(receiver.attemptsOf(messageId)).toHaveLength(1);
    },
    timeoutFor(WAIT_TIMEOUT_MS),
  );

  it(
    'refuses to publish for an endpoint that is not configured, and sends a stored one to MANUAL_REQUIRED, naming it',
    async () => {
      await expect(payments.pay('warehouse')).rejects.toThrow(
        expect.objectContaining({ name: 'OutboxMessageInvalidError', field: 'destination', message: expect.stringContaining('got destination "warehouse"') }),
      );
      // As another version of the application (or a hand-written INSERT) would have stored it.
      const messageId = randomUUID();
      await database.sql(
        `INSERT INTO {outbox_message} (message_id, message_type, transport, exchange, routing_key, destination, payload, headers, status, max_attempts)
       VALUES (?, 'order.paid', 'default', '', '', 'warehouse', '{}', '{}', 'PENDING', 3)`,
        [messageId],
      );
      app.get(OutboxDispatcher).trigger();
      const failed = await settled(messageId, 'MANUAL_REQUIRED');
      expect(failed.attempts).toBe(1);
      expect(failed.lastError).toContain(
        'no HTTP endpoint "warehouse" is configured: add it to HttpOutboxTransport.for({ endpoints }) and requeue the message',
      );
      expect(receiver.attemptsOf(messageId)).toEqual([]);
    },
    timeoutFor(WAIT_TIMEOUT_MS),
  );

  it(
    'signs each attempt with the endpoint secret, over the bytes it sends',
    async () => {
      receiver.script('/logistics', [answer(500, 'try again')]);
      const messageId = await publish('logistics', { orderId: 7, note: 'é € 😀 "quoted" \\ \u2028' });
      await settled(messageId, 'DONE');
      const requests = receiver.attemptsOf(messageId);
      expect(requests).toHaveLength(2);
      for (const request of requests) {
        expect(verifyWebhook({ headers: request.headers, body: request.body, secrets: SECRET })).toEqual({
          ok: true,
          id: messageId,
          timestamp: Number(request.headers['webhook-timestamp']),
        });
        const otherSecret = `whsec_${Buffer.from('another secret').toString('base64')}`;
        expect(verifyWebhook({ headers: request.headers, body: request.body, secrets: otherSecret })).toEqual({ ok: false, reason: 'no-matching-signature' });
        expect(JSON.parse(request.body.toString('utf8'))).toEqual({ orderId: 7, note: 'é € 😀 "quoted" \\ \u2028' });
      }
    },
    timeoutFor(WAIT_TIMEOUT_MS),
  );

  it(
    'takes an endpoint that keeps answering 503 for down: its messages wait unattempted, probed, and are delivered once it is back',
    async () => {
      receiver.script('/outage', [], answer(503, 'down for maintenance'));
      const messages = [];
      for (let i = 0; i < 8; i++) messages.push(await publish('outage', { n: i }, 3));
      // Five failed sends open the circuit; then one probe after 1 s, the next 2 s later. Without the
      // circuit, 3 attempts 100-200 ms apart would have sent every message to MANUAL_REQUIRED by then.
      await waitUntil(() => receiver.to('/outage').length >= 7, 'the endpoint was probed twice after the circuit opened', 2 * WAIT_TIMEOUT_MS);
      const during = await Promise.all(messages.map(row));
      expect(during.filter((message) => message.status === 'MANUAL_REQUIRED')).toEqual([]);
      // Only the sends that opened the circuit counted: 4 attempts at most, whoever made them.
      expect(during.reduce((sum, message) => sum + message.attempts, 0)).toBeLessThanOrEqual(4);

      receiver.script('/outage', [], OK);
      for (const messageId of messages) expect((await settled(messageId, 'DONE', 2 * WAIT_TIMEOUT_MS)).status).toBe('DONE');
      expect(new Set(receiver.to('/outage').map((request) => request.headers['webhook-id']))).toEqual(new Set(messages));
    },
    timeoutFor(4 * WAIT_TIMEOUT_MS),
  );

  it(
    'does not POST a message whose transaction rolled back',
    async () => {
      await expect(payments.pay('audit', { fail: true })).rejects.toThrow('payment rejected');
      // A marker published after it: a surviving row would have a lower id, and would be claimed
      // (and POSTed, then settled) no later than the marker.
      const marker = await publish('audit', { marker: true });
      await settled(marker, 'DONE');
      await waitUntil(async () => {
        const [busy] = await database.sql(
          `SELECT count(*) AS n FROM {outbox_message} WHERE destination = 'audit' AND status IN ('PENDING', 'PROCESSING', 'FAILED')`,
        );
        return Number(busy.n) === 0;
      }, 'no audit message is left to send');
      expect(receiver.to('/audit').map((request) => request.headers['webhook-id'])).toEqual([marker]);
      const [stored] = await database.sql(`SELECT count(*) AS n FROM {outbox_message} WHERE destination = 'audit'`);
      expect(Number(stored.n)).toBe(1);
    },
    timeoutFor(2 * WAIT_TIMEOUT_MS),
  );
});

describe('HTTP delivery start-up', () => {
  it(
    'refuses to start when an endpoint timeout is not below sendTimeoutMs, naming both',
    async () => {
      const transport = HttpOutboxTransport.for({
        endpoints: { partner: { url: 'http://127.0.0.1:9/hooks', timeoutMs: 5_000 }, fine: { url: 'http://127.0.0.1:9/ok', timeoutMs: 100 } },
      });
      // Refused where the module is declared (OutboxModule.forRoot), before any pool opens.
      const started = createTestApp({ database, statics: { transport }, outbox: { sendTimeoutMs: 5_000 }, logger: false });
      await expect(started).rejects.toThrow('HttpOutboxTransport endpoints.partner.timeoutMs (5000) must be less than sendTimeoutMs (5000)');
      await expect(started).rejects.not.toThrow(/endpoints\.fine/);
    },
    timeoutFor(STARTUP_TIMEOUT_MS),
  );

  it(
    'starts with the default endpoint timeout and the default sendTimeoutMs',
    async () => {
      const transport = HttpOutboxTransport.for({ endpoints: { partner: { url: 'http://127.0.0.1:9/hooks' } } });
      const app = await createTestApp({ database, statics: { transport }, logger: false });
      await app.close();
    },
    timeoutFor(STARTUP_TIMEOUT_MS),
  );
});
