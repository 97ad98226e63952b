import { Injectable, Type } from '@nestjs/common';
import { NonRetryableError } from '../../lib';
import { OutboxTransport, OutgoingMessage, RabbitMqOutboxTransport } from '../../lib/entries/transports';

/** Send failures a test injects (JSON, so child processes can take it in their config). */
export interface FlakySendsConfig {
  /** Share of sends that fail before reaching the broker. */
  failBeforeSendRate: number;
  /** Share of sends that reach the broker but are then reported failed (a lost confirm: the message is sent again). */
  failAfterSendRate?: number;
  /** Messages carrying this header (any value) always fail with NonRetryableError. */
  poisonHeader?: string;
}

/** The RabbitMQ transport with failures injected at random, as a broker outage or lost confirm would cause them. */
export function flakyTransport(config: FlakySendsConfig): Type<OutboxTransport> {
  @Injectable()
  class FlakyRabbitMqTransport extends RabbitMqOutboxTransport {
    override async send(message: OutgoingMessage): Promise<void> {
      if (config.poisonHeader && message.headers[config.poisonHeader] !== undefined) {
        throw new NonRetryableError(`poisoned message ${message.messageId}`);
      }
      if (Math.random() < config.failBeforeSendRate) throw new Error('injected failure before sending');
      await super.send(message);
      if (Math.random() < (config.failAfterSendRate ?? 0)) throw new Error('injected failure after sending (confirm lost)');
    }
  }
  return FlakyRabbitMqTransport;
}
