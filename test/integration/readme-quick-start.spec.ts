import { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ChannelModel, connect, ConsumeMessage } from 'amqplib';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { describeOn, sql } from '../support/database';
import { brokerName } from '../support/broker-names';
import { AMQP_URL, POSTGRES_URL } from '../support/environment';
import { quickStartBlocks, REPOSITORY_ROOT } from '../support/readme-quick-start';
import { STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS, waitUntil } from '../support/wait';

/** The quick start's database: one of its own, since the quick start uses the default schema. */
const DATABASE = 'it_readme_quick_start';

/** The broker names the quick start uses, and this file's own in their place. */
const BROKER_NAMES: Record<string, string> = {
  'inventory.order-paid': brokerName('it.quick-start.inventory.order-paid'),
  orders: brokerName('it.quick-start.orders'),
  inventory: brokerName('it.quick-start.inventory'),
};

/**
 * The README's quick start as a newcomer pastes it into a new Nest app, run against PostgreSQL and
 * RabbitMQ: paying an order publishes `order.paid`, the inbox handler reserves stock and publishes
 * `inventory.reserved`. Only what a test must change is changed: the library's import path, and
 * exchange and queue names, made this file's own so that parallel runs share no broker state.
 */
describeOn(['postgres'], 'The README quick start', () => {
  let directory: string;
  let app: INestApplicationContext | undefined;
  let broker: ChannelModel | undefined;

  beforeAll(async () => {
    await sql(`DROP DATABASE IF EXISTS ${DATABASE} WITH (FORCE)`);
    await sql(`CREATE DATABASE ${DATABASE}`);
    process.env.DATABASE_URL = databaseUrl();
    process.env.AMQP_URL = AMQP_URL;
    // Inside the repository, so that its node_modules resolve the peers.
    directory = mkdtempSync(join(REPOSITORY_ROOT, '.quick-start-'));
    for (const { file, code } of quickStartBlocks()) writeFileSync(join(directory, file), `${runnable(code)}\n`);
  });

  afterAll(async () => {
    await app?.close();
    if (broker) {
      const channel = await broker.createChannel();
      await channel.deleteQueue(BROKER_NAMES['inventory.order-paid']);
      for (const exchange of [BROKER_NAMES.orders, BROKER_NAMES.inventory]) await channel.deleteExchange(exchange);
      await broker.close();
    }
    if (directory) rmSync(directory, { recursive: true, force: true });
    await sql(`DROP DATABASE IF EXISTS ${DATABASE} WITH (FORCE)`);
  });

  it(
    'pays an order: order.paid reaches the inbox handler, which reserves and publishes inventory.reserved',
    async () => {
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- written by the test, loaded once the environment is set
      const { AppModule } = require(join(directory, 'app.module.ts')) as { AppModule: new () => unknown };
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const payments = require(join(directory, 'payments.service.ts')) as {
        Order: new () => { id: number };
        PaymentsService: new (...args: never[]) => { pay(id: number): Promise<void> };
      };
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const consumer = require(join(directory, 'order-paid.consumer.ts')) as { Reservation: new () => object };

      app = await NestFactory.createApplicationContext(AppModule, { logger: ['error', 'warn'] });
      await app.init();
      const reserved = await probe(BROKER_NAMES.inventory, 'inventory.reserved');

      const dataSource = app.get(DataSource);
      const { id } = await dataSource.getRepository(payments.Order).save({ status: 'NEW', amountCents: 1999 } as object);
      await app.get(payments.PaymentsService).pay(id);

      await waitUntil(
        async () => (await dataSource.getRepository(consumer.Reservation).countBy({ orderId: id })) === 1,
        'the inbox handler reserved the order',
      );
      await waitUntil(() => reserved.length === 1, 'inventory.reserved reached the broker');
      expect(JSON.parse(reserved[0].content.toString())).toEqual({ orderId: id });
      expect(reserved[0].properties.type).toBe('inventory.reserved');
      expect(await dataSource.getRepository(payments.Order).findOneByOrFail({ id })).toMatchObject({ status: 'PAID' });
    },
    timeoutFor(STARTUP_TIMEOUT_MS, WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS),
  );

  /** A queue of the test's own on `exchange` (declared by the app), recording what arrives. */
  async function probe(exchange: string, routingKey: string): Promise<ConsumeMessage[]> {
    broker = await connect(AMQP_URL);
    const channel = await broker.createChannel();
    const { queue } = await channel.assertQueue('', { exclusive: true });
    await channel.bindQueue(queue, exchange, routingKey);
    const received: ConsumeMessage[] = [];
    await channel.consume(queue, (message) => message && received.push(message), { noAck: true });
    return received;
  }

  function databaseUrl(): string {
    const url = new URL(POSTGRES_URL);
    url.pathname = `/${DATABASE}`;
    return url.toString();
  }

  /** The block with the library imported from the sources, and this file's broker names. */
  function runnable(code: string): string {
    let result = code.replace(/from 'nestjs-outbox'/g, `from '${join(REPOSITORY_ROOT, 'lib')}'`);
    for (const [name, own] of Object.entries(BROKER_NAMES)) result = result.split(`'${name}'`).join(`'${own}'`);
    return result;
  }
});
