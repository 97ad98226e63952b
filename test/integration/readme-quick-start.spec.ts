import { ConsoleLogger, INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ChannelModel, connect, GetMessage } from 'amqplib';
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
  'shipping.inventory-reserved': brokerName('it.quick-start.shipping.inventory-reserved'),
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
      await channel.deleteQueue(BROKER_NAMES['shipping.inventory-reserved']);
      for (const exchange of [BROKER_NAMES.orders, BROKER_NAMES.inventory]) await channel.deleteExchange(exchange);
      await broker.close();
    }
    if (directory) rmSync(directory, { recursive: true, force: true });
    await sql(`DROP DATABASE IF EXISTS ${DATABASE} WITH (FORCE)`);
  });

  it(
    'pays an order: order.paid reaches the inbox handler, which reserves and publishes inventory.reserved, without a warning',
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

      const warnings: string[] = [];
      const logger = new (class extends ConsoleLogger {
        override warn(message: unknown, ...rest: unknown[]): void {
          warnings.push(String(message));
          super.warn(message, ...rest);
        }
        override error(message: unknown, ...rest: unknown[]): void {
          warnings.push(String(message));
          super.error(message, ...rest);
        }
      })();
      logger.setLogLevels(['error', 'warn']);
      app = await NestFactory.createApplicationContext(AppModule, { logger });
      await app.init();

      const dataSource = app.get(DataSource);
      const { id } = await dataSource.getRepository(payments.Order).save({ status: 'NEW', amountCents: 1999 } as object);
      await app.get(payments.PaymentsService).pay(id);

      await waitUntil(
        async () => (await dataSource.getRepository(consumer.Reservation).countBy({ orderId: id })) === 1,
        'the inbox handler reserved the order',
      );
      // The quick start's own queue for inventory.reserved: what a reader's consumer would get.
      const reserved = await firstMessage(BROKER_NAMES['shipping.inventory-reserved']);
      expect(JSON.parse(reserved.content.toString())).toEqual({ orderId: id });
      expect(reserved.properties.type).toBe('inventory.reserved');
      expect(await dataSource.getRepository(payments.Order).findOneByOrFail({ id })).toMatchObject({ status: 'PAID' });
      // Run as written, everything settles: no message unroutable, retried or given up.
      await waitUntil(async () => (await statuses(dataSource, 'outbox_message')).every((status) => status === 'DONE'), 'every outbox row is DONE');
      expect(await statuses(dataSource, 'outbox_message')).toEqual(['DONE', 'DONE']);
      expect(await statuses(dataSource, 'inbox_message')).toEqual(['DONE']);
      expect(warnings).toEqual([]);
    },
    timeoutFor(STARTUP_TIMEOUT_MS, WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS),
  );

  /** The first message on `queue` (declared by the app), taken from the broker. */
  async function firstMessage(queue: string): Promise<GetMessage> {
    broker = await connect(AMQP_URL);
    const channel = await broker.createChannel();
    let message: GetMessage | false = false;
    await waitUntil(async () => (message = await channel.get(queue, { noAck: true })) !== false, `a message on ${queue}`);
    return message as unknown as GetMessage;
  }

  /** The statuses of a table's rows, in id order. */
  async function statuses(dataSource: DataSource, table: string): Promise<string[]> {
    const rows: { status: string }[] = await dataSource.query(`SELECT status FROM ${table} ORDER BY id`);
    return rows.map((row) => row.status);
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
