import { RabbitSubscribe } from '@golevelup/nestjs-rabbitmq';
import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable, OnModuleInit, Provider } from '@nestjs/common';
import type { Channel } from 'amqplib';
import { DataSource } from 'typeorm';
import { InboxHandler, InboxMode, OutboxService } from '../../lib';
import { TestEffect } from './test-entities';

/** An inbox consumer for tests, described by plain data so a child process can build it too. */
export interface InboxFixtureConfig {
  exchange: string;
  routingKey: string;
  /** Exchange the handler publishes its two outgoing messages to (through the outbox). */
  outExchange: string;
  deadLetterExchange: string;
  consumers: { name: string; queue: string }[];
  mode?: InboxMode;
  maxAttempts?: number;
  /** Kill this process right after the handler's transaction commits (before the ack). */
  crash?: 'after-commit' | 'in-handler';
  /** Print `HANDLER_STARTED <consumer> <messageId>` on stdout each time the handler starts (for tests of child processes). */
  announceStarts?: boolean;
  /** Ignore the events' `holdMs`: an instance that takes over a held message runs it at once. */
  ignoreHolds?: boolean;
  /** Consume durable quorum queues (`x-queue-type: quorum`), as on a RabbitMQ cluster, instead of transient classic ones. */
  quorumQueues?: boolean;
}

/** What the handler does, from the message body. */
export interface FixtureEvent {
  orderId: number;
  /** Throw on this many first attempts (per consumer and message id, counted in this process). */
  failTimes?: number;
  alwaysFail?: boolean;
  /** Wait this long inside the handler before writing. */
  holdMs?: number;
  /** The business fact, used as the handler's bizKey when present. */
  bizKey?: string;
}

/** Providers with one `@InboxHandler()` method per configured consumer. */
export function inboxFixtureProviders(config: InboxFixtureConfig): Provider[] {
  return config.consumers.map((consumer) => createConsumerClass(config, consumer));
}

function createConsumerClass(config: InboxFixtureConfig, consumer: { name: string; queue: string }) {
  const attempts = new Map<string, number>();
  let crashAfterCommit = false;

  @Injectable()
  class FixtureConsumer implements OnModuleInit {
    constructor(
      private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
      private readonly outbox: OutboxService,
      private readonly dataSource: DataSource,
    ) {}

    onModuleInit(): void {
      this.dataSource.subscribers.push({
        afterTransactionCommit: () => {
          if (crashAfterCommit) process.kill(process.pid, 'SIGKILL');
        },
      });
    }

    @RabbitSubscribe({
      exchange: config.exchange,
      routingKey: config.routingKey,
      queue: consumer.queue,
      queueOptions: config.quorumQueues
        ? { durable: true, arguments: { 'x-queue-type': 'quorum', 'x-dead-letter-exchange': config.deadLetterExchange } }
        : { durable: false, arguments: { 'x-dead-letter-exchange': config.deadLetterExchange } },
    })
    @InboxHandler({ consumer: consumer.name, mode: config.mode, maxAttempts: config.maxAttempts, bizKey: (event: FixtureEvent) => event.bizKey })
    async handle(event: FixtureEvent, message: { properties: { messageId?: string } }): Promise<void> {
      // Written synchronously (stdout is a pipe): the line is out before a crash the handler causes.
      if (config.announceStarts) process.stdout.write(`HANDLER_STARTED ${consumer.name} ${message.properties.messageId}\n`);
      const key = message.properties.messageId ?? String(event.orderId);
      // Counted only for events that fail on purpose: a count of every message would grow without
      // bound in a long run (bench/memory.soak.ts measures this process's heap).
      const failing = event.alwaysFail || (event.failTimes ?? 0) > 0;
      const attempt = failing ? (attempts.get(key) ?? 0) + 1 : 1;
      if (failing) attempts.set(key, attempt);
      if (event.holdMs && !config.ignoreHolds) await new Promise((resolve) => setTimeout(resolve, event.holdMs));
      await this.txHost.tx
        .getRepository(TestEffect)
        .insert({ consumer: consumer.name, orderId: event.orderId, messageId: message.properties.messageId ?? null });
      for (const kind of ['reserved', 'notified']) {
        await this.outbox.publish({
          type: `inventory.${kind}`,
          exchange: config.outExchange,
          routingKey: `inventory.${kind}`,
          bizKey: `${consumer.name}:order-${event.orderId}:${kind}`,
          payload: { orderId: event.orderId, consumer: consumer.name },
        });
      }
      if (config.crash === 'in-handler') process.kill(process.pid, 'SIGKILL');
      if (event.alwaysFail || attempt <= (event.failTimes ?? 0)) throw new Error(`handler failure on attempt ${attempt}`);
      if (config.crash === 'after-commit') crashAfterCommit = true;
    }
  }
  Object.defineProperty(FixtureConsumer, 'name', { value: `FixtureConsumer_${consumer.name.replace(/\W/g, '_')}` });
  return FixtureConsumer;
}

/**
 * Gives a test file fresh broker objects for `config`: its incoming exchange, a dead-letter
 * exchange declared anew (a leftover of another type would refuse the declaration) and no
 * leftover consumer queues (golevelup declares them with their dead-letter arguments).
 */
export async function prepareInboxBroker(channel: Channel, config: InboxFixtureConfig): Promise<void> {
  await channel.assertExchange(config.exchange, 'topic', { durable: false });
  await channel.deleteExchange(config.deadLetterExchange);
  await channel.assertExchange(config.deadLetterExchange, 'topic', { durable: false });
  await deleteInboxQueues(channel, config);
}

/** Deletes the consumer queues of `config`. */
export async function deleteInboxQueues(channel: Channel, config: InboxFixtureConfig): Promise<void> {
  for (const { queue } of config.consumers) await channel.deleteQueue(queue);
}
