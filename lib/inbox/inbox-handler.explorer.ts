import type { RabbitHandlerConfig } from '@golevelup/nestjs-rabbitmq';
import { TransactionHost } from '@nestjs-cls/transactional';
import { Inject, Injectable, Logger, OnModuleInit, Optional, Scope } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, ModuleRef } from '@nestjs/core';
import { ExternalContextCreator } from '@nestjs/core/helpers/external-context-creator';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper';
import type { ConsumeMessage } from 'amqplib';
import { OutboxError } from '../errors';
import { OUTBOX_OPTIONS } from '../naming/injection-tokens';
import { OutboxModuleOptions } from '../options/outbox-module-options';
import { decoratedMethods } from './decorated-methods';
import { golevelup } from '../transport/amqp/golevelup';
import { InboxConsumers } from './inbox-consumers';
import { InboxSubscriptions } from './inbox-subscriptions';
import { callAsNest, runsMethodAlone } from './direct-call';
import { guardedErrorHandler } from './guarded-error-handler';
import { CONSUMER_NAME_MAX_LENGTH } from '../message/message-limits';
import {
  DECLARED_RABBIT_HANDLER,
  INBOX_HANDLER_DEFINITION,
  INBOX_HANDLER_METADATA,
  InboxHandlerDefinition,
  InboxHandlerOptions,
} from './inbox-handler-options';
import { safeDeserializer } from './malformed-body';
import { nestHandlerChain, NestHandlerChain } from './nest-handler-chain';
import { runStoredDelivery } from './stored-delivery';
import { unstorableReason } from './storable-text';
import { resolveSubscription } from './subscription-settings';
import { OUTBOX_TRANSACTION_HOST, transactionConnectionHint } from '../naming/outbox-transaction-host';
import { OutboxIdentity } from '../naming/outbox-identity';
import { chosenOutbox, configuredOutboxes } from '../naming/configured-outboxes';

/**
 * Finds `@InboxHandler()` methods at module init (before golevelup subscribes them at
 * bootstrap), checks each is a plain `@RabbitSubscribe` handler on a singleton with a unique
 * consumer name, and prepares it: a deserializer that never throws (so a malformed body reaches
 * the inbox instead of being requeued forever), an error handler that never throws (so a
 * delivery settled on a closed channel does not end the process), a watch for the broker's cancel
 * of its consumer, and the resolved definition the interceptor and the deferred worker use,
 * including whether the interceptor may call the method directly and the Nest handler chain the
 * worker runs deferred deliveries through.
 */
@Injectable()
export class InboxHandlerExplorer implements OnModuleInit {
  private readonly logger = new Logger(this.identity.logContext('InboxHandler'));

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly moduleRef: ModuleRef,
    private readonly contextCreator: ExternalContextCreator,
    @Inject(OUTBOX_OPTIONS) private readonly options: OutboxModuleOptions,
    private readonly consumers: InboxConsumers,
    private readonly subscriptions: InboxSubscriptions,
    private readonly identity: OutboxIdentity,
    @Optional() @Inject(OUTBOX_TRANSACTION_HOST) private readonly transactionHost?: TransactionHost,
  ) {}

  onModuleInit(): void {
    const wrappers = [...this.discovery.getProviders(), ...this.discovery.getControllers()];
    const configured = configuredOutboxes(this.discovery);
    for (const { wrapper, methodName, method, options } of decoratedMethods<InboxHandlerOptions>(wrappers, this.scanner, INBOX_HANDLER_METADATA)) {
      const where = `@InboxHandler on ${wrapper.metatype!.name}.${methodName}`;
      // Each outbox's explorer sets up its own handlers; every one checks that each handler's outbox exists.
      if (chosenOutbox(where, options.outbox, configured) === this.identity.name) this.register(wrapper, methodName, method, options, where);
    }
  }

  private register(wrapper: InstanceWrapper, methodName: string, method: object, options: InboxHandlerOptions, where: string): void {
    if (!this.transactionHost) {
      throw new OutboxError(
        `${where} runs handlers in transactions: register ClsModule with ClsPluginTransactional (@nestjs-cls/transactional)${transactionConnectionHint(this.identity)}`,
      );
    }
    // @RabbitSubscribe() is golevelup's: an @InboxHandler means it is installed.
    const { RABBIT_HANDLER } = golevelup();
    // As the decorator wrote it: an application started before in this process rewrote RABBIT_HANDLER.
    const rabbit = (Reflect.getMetadata(DECLARED_RABBIT_HANDLER, method) ?? Reflect.getMetadata(RABBIT_HANDLER, method)) as RabbitHandlerConfig | undefined;
    if (!rabbit) throw new OutboxError(`${where} needs @RabbitSubscribe() on the same method`);
    if (rabbit.type !== 'subscribe') throw new OutboxError(`${where}: RPC handlers cannot be inbox handlers (their reply is the effect)`);
    if (rabbit.batchOptions) throw new OutboxError(`${where}: batch subscribers are not supported`);
    if (wrapper.scope === Scope.REQUEST || wrapper.scope === Scope.TRANSIENT || !wrapper.isDependencyTreeStatic()) {
      throw new OutboxError(`${where}: the provider must be a singleton (not request-scoped or transient)`);
    }
    const consumer = options.consumer ?? `${wrapper.metatype!.name}.${methodName}`;
    if (typeof consumer !== 'string' || consumer.length === 0 || consumer.length > CONSUMER_NAME_MAX_LENGTH || unstorableReason(consumer)) {
      throw new OutboxError(
        `${where}: consumer must be a non-empty string of at most ${CONSUMER_NAME_MAX_LENGTH} characters, well-formed and without NUL (the inbox table's column)`,
      );
    }
    this.consumers.claimName(consumer, where);
    const maxAttempts = options.maxAttempts ?? this.options.maxAttempts;
    if (!Number.isInteger(maxAttempts) || maxAttempts < 1) throw new OutboxError(`${where}: maxAttempts must be a positive integer`);
    if (options.mode !== undefined && options.mode !== 'transactional' && options.mode !== 'deferred') {
      throw new OutboxError(`${where}: mode must be 'transactional' or 'deferred'`);
    }
    if (options.orderingKey && options.mode !== 'deferred') {
      // In transactional mode deliveries are processed as the broker hands them out.
      throw new OutboxError(`${where}: orderingKey needs mode 'deferred'`);
    }

    const subscription = resolveSubscription(this.moduleRef, rabbit, where);
    const deserialize = safeDeserializer(rabbit.deserializer);
    const businessMethod = method as (...args: unknown[]) => unknown;
    let chain: NestHandlerChain | undefined;
    const definition: InboxHandlerDefinition = {
      consumer,
      outbox: this.identity.name,
      mode: options.mode ?? 'transactional',
      bizKey: options.bizKey,
      messageIdFallback: options.messageIdFallback,
      orderingKey: options.orderingKey,
      maxAttempts,
      // Built at the first deferred run, long after every enhancer (global ones included) is registered.
      invoke: (payload: unknown, message: ConsumeMessage, headers: Record<string, unknown> | undefined) => {
        chain ??= nestHandlerChain(this.contextCreator, wrapper.instance as object, methodName, businessMethod);
        return chain(payload, message, headers);
      },
      deserialize,
      customDeserializer: rabbit.deserializer !== undefined,
      callDirectly: runsMethodAlone(wrapper.metatype!, methodName, method) ? (callback, args) => callAsNest(callback, wrapper.instance, args) : undefined,
    };
    this.subscriptions.watch(deserialize, consumer);
    if (definition.mode === 'deferred')
      this.consumers.registerDeferred({ consumer, messagingSystem: 'rabbitmq', runStored: (row, replay) => runStoredDelivery(definition, row, replay) });
    Reflect.defineMetadata(INBOX_HANDLER_DEFINITION, definition, method);
    Reflect.defineMetadata(DECLARED_RABBIT_HANDLER, rabbit, method);
    Reflect.defineMetadata(
      RABBIT_HANDLER,
      {
        ...rabbit,
        deserializer: deserialize,
        errorHandler: guardedErrorHandler(subscription.errorHandler, `${wrapper.metatype!.name}.${methodName}`, this.logger),
      },
      method,
    );
  }
}
