import type { AmqpConnection, MessageErrorHandler, MessageHandlerErrorBehavior, RabbitHandlerConfig } from '@golevelup/nestjs-rabbitmq';
import type { ModuleRef } from '@nestjs/core';
import { OutboxError } from '../errors';
import { golevelup, golevelupIfInstalled } from '../transport/amqp/golevelup';

/** What the inbox needs to know of how golevelup will subscribe one handler. */
export interface SubscriptionSettings {
  /** The connection the handler is subscribed on, when the application has it. */
  connection?: AmqpConnection;
  /** The error handler golevelup would call for this handler were the inbox not there. */
  errorHandler: MessageErrorHandler;
}

/**
 * Resolves, at module init, what golevelup will use for a handler: its connection (the named one,
 * or the application's), and the error handler it would pick (the handler's own `errorHandler`,
 * else the `errorBehavior` of the module's `handlers` entry or of the decorator, else the
 * connection's `defaultSubscribeErrorBehavior`). golevelup lays a `handlers` entry of
 * `RabbitMQModule.forRoot()` over the decorator's settings, so an entry that sets its own
 * `errorHandler` or `deserializer` would replace the inbox's: refused, naming the handler.
 */
export function resolveSubscription(moduleRef: ModuleRef, rabbit: RabbitHandlerConfig, where: string): SubscriptionSettings {
  const connection = findConnection(moduleRef, rabbit.connection);
  const configuration = connection?.configuration;
  const lookup = rabbit.name ?? configuration?.defaultHandler;
  const raw = lookup && configuration?.handlers ? configuration.handlers[lookup] : undefined;
  const entries = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
  for (const setting of ['errorHandler', 'deserializer'] as const) {
    if (entries.some((entry) => entry?.[setting] !== undefined)) {
      throw new OutboxError(
        `${where}: RabbitMQModule's handlers entry "${lookup}" sets ${setting}, which would replace the one the inbox gives the handler; set it on @RabbitSubscribe() instead, where the inbox wraps it`,
      );
    }
  }
  const behaviors = new Set(entries.map((entry) => entry?.errorBehavior).filter((b) => b !== undefined));
  if (behaviors.size > 1) {
    throw new OutboxError(
      `${where}: RabbitMQModule's handlers entries "${lookup}" set different errorBehavior values; the inbox needs one per handler: set it on @RabbitSubscribe()`,
    );
  }
  const { getHandlerForLegacyBehavior, MessageHandlerErrorBehavior } = golevelup();
  const behavior: MessageHandlerErrorBehavior =
    [...behaviors][0] ?? rabbit.errorBehavior ?? configuration?.defaultSubscribeErrorBehavior ?? MessageHandlerErrorBehavior.REQUEUE;
  return { connection, errorHandler: rabbit.errorHandler ?? (getHandlerForLegacyBehavior(behavior) as MessageErrorHandler) };
}

/** Every connection golevelup holds (it subscribes a handler without `connection` on each of them). */
export function allConnections(moduleRef: ModuleRef): AmqpConnection[] {
  const installed = golevelupIfInstalled();
  if (!installed) return []; // not installed: no deliveries
  try {
    return moduleRef.get(installed.AmqpConnectionManager, { strict: false }).getConnections();
  } catch {
    return []; // no RabbitMQModule: no deliveries
  }
}

function findConnection(moduleRef: ModuleRef, name: string | undefined): AmqpConnection | undefined {
  const { AmqpConnection, AmqpConnectionManager } = golevelup();
  try {
    if (name) return moduleRef.get(AmqpConnectionManager, { strict: false }).getConnection(name);
    return moduleRef.get(AmqpConnection, { strict: false });
  } catch {
    // No RabbitMQModule in the application: golevelup subscribes nothing, there is nothing to resolve.
    return undefined;
  }
}
