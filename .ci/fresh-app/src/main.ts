import 'reflect-metadata';
import { AmqpConnection } from '@golevelup/nestjs-rabbitmq';
import { NestFactory } from '@nestjs/core';
import { DataSource } from 'typeorm';
import { AppModule } from './app.module.js';
import { EXCHANGE, Receipt } from './order-placed.consumer.js';
import { OrdersService } from './orders.service.js';

const DEADLINE_MS = 120_000;

/** Places one order, then waits until its message went through RabbitMQ into the inbox handler. */
async function main(): Promise<void> {
  const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error', 'warn', 'log'] });
  app.enableShutdownHooks();
  try {
    const reference = `fresh-${process.pid}-${Date.now()}`;
    await app.get(OrdersService).place(reference);
    const receipts = app.get(DataSource).getRepository(Receipt);
    const deadline = Date.now() + DEADLINE_MS;
    while (!(await receipts.existsBy({ reference }))) {
      if (Date.now() > deadline) throw new Error(`order ${reference} was not received within ${DEADLINE_MS} ms`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    console.log(`fresh app: order ${reference} delivered end to end`);
  } finally {
    // The broker is shared between runs: leave no queue or exchange of this one behind.
    const channel = app.get(AmqpConnection).channel;
    await channel.deleteQueue(`${EXCHANGE}.order-placed`).catch(() => undefined);
    await channel.deleteExchange(EXCHANGE).catch(() => undefined);
    await app.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
