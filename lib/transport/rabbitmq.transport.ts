import { AmqpConnection } from '@golevelup/nestjs-rabbitmq';
import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { ConfirmChannel, ConsumeMessage } from 'amqplib';
import type { ChannelWrapper } from 'amqp-connection-manager';
import { OutboxError, SendTimeoutError, UnroutableMessageError } from '../errors';
import { OUTBOX_OPTIONS } from '../outbox.constants';
import { OutboxModuleOptions } from '../options/outbox-module-options';
import { OutboxTransport, OutgoingMessage } from './outbox-transport';

/**
 * Publishes through golevelup's connection on a confirm channel of its own: persistent,
 * `messageId` set, `mandatory` so that an unroutable message (returned by the broker before
 * its confirm) is reported as not sent. Many sends may be in flight at once; each is bounded
 * by `sendTimeoutMs`, since the channel otherwise buffers forever while disconnected.
 */
@Injectable()
export class RabbitMqOutboxTransport implements OutboxTransport, OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(RabbitMqOutboxTransport.name);
  private amqp?: AmqpConnection;
  private channel?: ChannelWrapper;
  /** Message ids the broker returned as unroutable and whose confirm has not been seen yet. */
  private readonly returned = new Set<string>();

  constructor(
    private readonly moduleRef: ModuleRef,
    @Inject(OUTBOX_OPTIONS) private readonly options: OutboxModuleOptions,
  ) {}

  /**
   * Finds golevelup's connection wherever the application registered RabbitMQModule; at module
   * init, so a missing module fails the boot before any dispatcher starts.
   */
  onModuleInit(): void {
    try {
      this.amqp = this.moduleRef.get(AmqpConnection, { strict: false });
    } catch (error) {
      throw new OutboxError(
        'The RabbitMQ outbox transport needs RabbitMQModule.forRoot() from @golevelup/nestjs-rabbitmq in the application (or pass another transport to OutboxModule.forRoot)',
        { cause: error },
      );
    }
  }

  async send(message: OutgoingMessage): Promise<void> {
    try {
      await this.confirmChannel().publish(message.exchange, message.routingKey, Buffer.from(message.payload), {
        messageId: message.messageId,
        type: message.type,
        headers: message.headers,
        contentType: 'application/json',
        persistent: true,
        mandatory: this.options.mandatory,
        timestamp: Math.floor(message.createdAt.getTime() / 1000),
        timeout: this.options.sendTimeoutMs,
      });
    } catch (error) {
      this.returned.delete(message.messageId);
      if (error instanceof Error && error.message === 'timeout') {
        throw new SendTimeoutError(message.messageId, this.options.sendTimeoutMs, { cause: error });
      }
      throw error;
    }
    // basic.return precedes the confirm on the channel, so a returned message is already known.
    if (this.returned.delete(message.messageId)) {
      throw new UnroutableMessageError(message.messageId, message.exchange, message.routingKey);
    }
  }

  async onApplicationShutdown(): Promise<void> {
    const channel = this.channel;
    this.channel = undefined;
    await channel?.close().catch((error: unknown) => this.logger.debug(`closing the outbox channel: ${String(error)}`));
  }

  private confirmChannel(): ChannelWrapper {
    if (!this.amqp) throw new OutboxError('The RabbitMQ outbox transport is not started yet');
    this.channel ??= this.amqp.managedConnection.createChannel({
      name: 'nestjs-outbox',
      confirm: true,
      json: false,
      // Runs on every (re)connection, for each new underlying channel.
      setup: async (channel: ConfirmChannel) => {
        channel.on('return', (returned: ConsumeMessage) => {
          const messageId = returned.properties.messageId as string | undefined;
          if (messageId) this.returned.add(messageId);
        });
      },
    });
    return this.channel;
  }
}
