// Compiled in a fresh app before RabbitMQ's packages are installed: nestjs-outbox's public types
// must not need golevelup's or amqplib's (an app on webhooks and HTTP has neither).
import { InboxHandlerOptions, OutboxModule, OutboxService } from 'nestjs-outbox';
import { WebhookInbox } from 'nestjs-outbox/webhooks';
import type { AmqpMessage } from 'nestjs-outbox';
import { CapturingOutboxTransport, OutboxTestKit } from 'nestjs-outbox/testing';

export const used = [OutboxModule, OutboxService, WebhookInbox, OutboxTestKit, CapturingOutboxTransport];
export const bizKey: InboxHandlerOptions['bizKey'] = (_payload: unknown, message: AmqpMessage) => String(message.properties.messageId);
