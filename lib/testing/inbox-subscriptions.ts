import type { RabbitHandlerConfig } from '@golevelup/nestjs-rabbitmq';
import type { INestApplicationContext } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { decoratedMethods } from '../inbox/decorated-methods';
import { DECLARED_RABBIT_HANDLER, INBOX_HANDLER_DEFINITION, INBOX_HANDLER_METADATA, type InboxHandlerDefinition } from '../inbox/inbox-handler-options';

/** One binding of a subscription's queue: messages published to `exchange` with a matching key reach it. */
export interface LoopbackBinding {
  /** `''` is the default exchange, which routes a key to the queue of that name. */
  exchange: string;
  routingKey: string;
}

/** An `@InboxHandler()` method and the queue its `@RabbitSubscribe()` declares, as loopback delivery sees it. */
export interface InboxSubscription {
  /** `ClassName.method`, for messages. */
  handler: string;
  definition: InboxHandlerDefinition;
  /** The named queue, or a name of its own for a server-named (exclusive) queue. */
  queue: string;
  /** Handlers with the same key consume one queue (a named queue on one connection) and take turns. */
  queueKey: string;
  bindings: LoopbackBinding[];
  /** Quorum queues count redeliveries in `x-delivery-count`. */
  quorum: boolean;
}

/**
 * The application's `@InboxHandler()` methods with the bindings their `@RabbitSubscribe()`
 * declares (`exchange` with each `routingKey`, and `bindings`), read from the metadata the inbox
 * sets up at start-up. Bindings declared elsewhere (`RabbitMQModule.forRoot({ queues })`, the
 * management UI) are not known here, except the default exchange's binding of a named queue.
 */
export function inboxSubscriptions(app: INestApplicationContext): InboxSubscription[] {
  const discovery = app.get(DiscoveryService, { strict: false });
  const wrappers = [...discovery.getProviders(), ...discovery.getControllers()];
  const subscriptions: InboxSubscription[] = [];
  for (const { wrapper, methodName, method } of decoratedMethods(wrappers, new MetadataScanner(), INBOX_HANDLER_METADATA)) {
    const definition = Reflect.getMetadata(INBOX_HANDLER_DEFINITION, method) as InboxHandlerDefinition | undefined;
    const rabbit = Reflect.getMetadata(DECLARED_RABBIT_HANDLER, method) as RabbitHandlerConfig | undefined;
    const handler = `${wrapper.metatype!.name}.${methodName}`;
    if (!definition || !rabbit) throw new Error(`${handler}: @InboxHandler was not set up; initialise the application (app.init()) before using the test kit`);
    const named = typeof rabbit.queue === 'string' && rabbit.queue !== '';
    const queue = named ? rabbit.queue! : `loopback.${handler}`;
    const routingKeys = rabbit.routingKey === undefined ? [] : Array.isArray(rabbit.routingKey) ? rabbit.routingKey : [rabbit.routingKey];
    const bindings: LoopbackBinding[] = [];
    if (rabbit.exchange) for (const routingKey of routingKeys) if (routingKey != null) bindings.push({ exchange: rabbit.exchange, routingKey });
    for (const binding of rabbit.bindings ?? []) bindings.push({ exchange: binding.exchange, routingKey: binding.routingKey });
    if (named) bindings.push({ exchange: '', routingKey: queue });
    subscriptions.push({
      handler,
      definition,
      queue,
      queueKey: named ? `${rabbit.connection ?? ''}/${queue}` : `${handler}/`,
      bindings,
      quorum: rabbit.queueOptions?.arguments?.['x-queue-type'] === 'quorum',
    });
  }
  return subscriptions;
}
