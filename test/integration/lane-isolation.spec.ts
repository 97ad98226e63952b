import { INestApplicationContext } from '@nestjs/common';
import { createServer, IncomingMessage, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { DataSource } from 'typeorm';
import { OutboxService } from '../../lib';
import { HttpOutboxTransport, RabbitMqOutboxTransport } from '../../lib/entries/transports';
import { brokerName } from '../support/broker-names';
import { testDatabase } from '../support/database';
import { QueueProbe } from '../support/queue-probe';
import { TcpProxy } from '../support/tcp-proxy';
import { createTestApp } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS, waitUntil } from '../support/wait';

const database = testDatabase('it_lane_isolation');
const EXCHANGE = brokerName('it.lane-isolation');
const QUEUE = brokerName('it.lane-isolation.probe');
/** Each HTTP attempt gives up after this; the module's send timeout is above it. */
const ENDPOINT_TIMEOUT_MS = 1_000;
const PARTNER_MESSAGES = 30;
const BROKER_MESSAGES = 40;
/** 200 messages/s offered to the RabbitMQ lane. */
const PUBLISH_EVERY_MS = 5;

/** A partner that answers every POST with 200, recording the webhook ids it got. */
async function startPartner(): Promise<{ server: Server; url: string; received: Set<string> }> {
  const received = new Set<string>();
  const server = createServer((request: IncomingMessage, response) => {
    request.resume();
    request.on('end', () => {
      received.add(String(request.headers['webhook-id']));
      response.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`, received };
}

describe('A lane whose transport stops answering', () => {
  let app: INestApplicationContext;
  let partner: Awaited<ReturnType<typeof startPartner>>;
  let proxy: TcpProxy;
  let probe: QueueProbe;

  beforeAll(async () => {
    await database.reset();
    partner = await startPartner();
    const port = Number(new URL(partner.url).port);
    proxy = await TcpProxy.start('127.0.0.1', port);
    probe = await QueueProbe.bind(EXCHANGE, '#', QUEUE);
    app = await createTestApp({
      database,
      statics: {
        transports: {
          default: RabbitMqOutboxTransport,
          partner: {
            transport: HttpOutboxTransport.for({ endpoints: { sink: { url: proxy.rewrite(partner.url), timeoutMs: ENDPOINT_TIMEOUT_MS } } }),
            batchSize: 10,
          },
        },
      },
      outbox: { pollIntervalMs: 100, sendTimeoutMs: 3_000, backoffBaseMs: 100, backoffMaxMs: 200 },
    });
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(async () => {
    await app?.close();
    await probe?.close();
    await proxy?.close();
    partner?.server.closeAllConnections();
    await new Promise((resolve) => partner?.server.close(resolve));
  });

  async function publish(message: Parameters<OutboxService['publish']>[0]): Promise<{ messageId: string; committedAt: number }> {
    const { messageId } = await app.get(DataSource).transaction((manager) => app.get(OutboxService).publish(message, { manager }));
    return { messageId, committedAt: performance.now() };
  }

  it(
    'holds up no RabbitMQ message, spends at most the attempts that opened its circuit, and sends its own once answered again',
    async () => {
      proxy.blackHole();
      const held: string[] = [];
      for (let i = 0; i < PARTNER_MESSAGES; i++)
        held.push((await publish({ type: 'order.shipped', transport: 'partner', destination: 'sink', payload: { i } })).messageId);

      // 200 messages/s on the RabbitMQ lane while the partner lane's requests hang.
      const sent: string[] = [];
      for (let i = 0; i < BROKER_MESSAGES; i++) {
        sent.push((await publish({ type: 'order.paid', exchange: EXCHANGE, routingKey: 'order.paid', payload: { i } })).messageId);
        await new Promise((resolve) => setTimeout(resolve, PUBLISH_EVERY_MS));
      }
      await probe.waitFor(BROKER_MESSAGES);
      expect(new Set(probe.messageIds)).toEqual(new Set(sent));
      expect(partner.received.size).toBe(0);

      // The endpoint's circuit opened on its fifth failure: nothing after it cost an attempt.
      await waitUntil(async () => {
        const [row] = await database.sql(`SELECT count(*) AS n FROM {outbox_message} WHERE transport = 'partner' AND status = 'PROCESSING'`);
        return Number(row.n) === 0;
      }, 'the hung requests timed out and were settled');
      const [{ attempts }] = await database.sql(`SELECT sum(attempts) AS attempts FROM {outbox_message} WHERE transport = 'partner'`);
      expect(Number(attempts)).toBeLessThanOrEqual(5);
      const [{ manual }] = await database.sql(`SELECT count(*) AS manual FROM {outbox_message} WHERE transport = 'partner' AND status = 'MANUAL_REQUIRED'`);
      expect(Number(manual)).toBe(0);

      proxy.restore();
      // Restoring resets the connections the black hole swallowed: those requests fail, and are
      // retried with backoff once the endpoint's circuit lets a probe through.
      await waitUntil(
        async () => (await database.statusCounts()).DONE === PARTNER_MESSAGES + BROKER_MESSAGES,
        'every message was sent once the partner answered again',
        2 * WAIT_TIMEOUT_MS,
      );
      expect(held.every((id) => partner.received.has(id))).toBe(true);
      expect(await database.statusCounts()).toEqual({ DONE: PARTNER_MESSAGES + BROKER_MESSAGES });
    },
    timeoutFor(WAIT_TIMEOUT_MS, 3 * WAIT_TIMEOUT_MS),
  );
});
