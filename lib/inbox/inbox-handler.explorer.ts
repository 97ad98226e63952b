import { RABBIT_HANDLER, RabbitHandlerConfig } from '@golevelup/nestjs-rabbitmq';
import { TransactionHost } from '@nestjs-cls/transactional';
import { Inject, Injectable, OnModuleInit, Optional, Scope } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper';
import type { ConsumeMessage } from 'amqplib';
import { OutboxError } from '../errors';
import { OUTBOX_OPTIONS } from '../outbox.constants';
import { OutboxModuleOptions } from '../options/outbox-module-options';
import { callAsNest, runsMethodAlone } from './direct-call';
import { CONSUMER_NAME_MAX_LENGTH, INBOX_HANDLER_DEFINITION, INBOX_HANDLER_METADATA } from './inbox.constants';
import { InboxHandlerDefinition, InboxHandlerOptions } from './inbox-handler-options';
import { safeDeserializer } from './malformed-body';

/**
 * Finds `@InboxHandler()` methods at module init (before golevelup subscribes them at
 * bootstrap), checks each is a plain `@RabbitSubscribe` handler on a singleton with a unique
 * consumer name, and prepares it: a deserializer that never throws (so a malformed body reaches
 * the inbox instead of being requeued forever) and the resolved definition the interceptor and
 * the deferred worker use, including whether the interceptor may call the method directly.
 */
@Injectable()
export class InboxHandlerExplorer implements OnModuleInit {
  private readonly handlers = new Map<string, InboxHandlerDefinition>();

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    @Inject(OUTBOX_OPTIONS) private readonly options: OutboxModuleOptions,
    @Optional() private readonly transactionHost?: TransactionHost,
  ) {}

  /** Every inbox handler of the application, by consumer name. */
  get definitions(): ReadonlyMap<string, InboxHandlerDefinition> {
    return this.handlers;
  }

  onModuleInit(): void {
    for (const wrapper of [...this.discovery.getProviders(), ...this.discovery.getControllers()]) {
      const prototype = wrapper.metatype?.prototype as Record<string, unknown> | undefined;
      if (!prototype || typeof wrapper.metatype !== 'function') continue;
      for (const methodName of this.scanner.getAllMethodNames(prototype)) {
        const method = prototype[methodName] as object;
        const options = Reflect.getMetadata(INBOX_HANDLER_METADATA, method) as InboxHandlerOptions | undefined;
        if (options) this.register(wrapper, methodName, method, options);
      }
    }
  }

  private register(wrapper: InstanceWrapper, methodName: string, method: object, options: InboxHandlerOptions): void {
    const where = `@InboxHandler on ${wrapper.metatype!.name}.${methodName}`;
    if (!this.transactionHost) {
      throw new OutboxError(`${where} runs handlers in transactions: register ClsModule with ClsPluginTransactional (@nestjs-cls/transactional)`);
    }
    const rabbit = Reflect.getMetadata(RABBIT_HANDLER, method) as RabbitHandlerConfig | undefined;
    if (!rabbit) throw new OutboxError(`${where} needs @RabbitSubscribe() on the same method`);
    if (rabbit.type !== 'subscribe') throw new OutboxError(`${where}: RPC handlers cannot be inbox handlers (their reply is the effect)`);
    if (rabbit.batchOptions) throw new OutboxError(`${where}: batch subscribers are not supported`);
    if (wrapper.scope === Scope.REQUEST || wrapper.scope === Scope.TRANSIENT || !wrapper.isDependencyTreeStatic()) {
      throw new OutboxError(`${where}: the provider must be a singleton (not request-scoped or transient)`);
    }
    const consumer = options.consumer ?? `${wrapper.metatype!.name}.${methodName}`;
    if (typeof consumer !== 'string' || consumer.length === 0 || consumer.length > CONSUMER_NAME_MAX_LENGTH) {
      throw new OutboxError(`${where}: consumer must be a non-empty string of at most ${CONSUMER_NAME_MAX_LENGTH} characters (the inbox table's column)`);
    }
    if (this.handlers.has(consumer)) throw new OutboxError(`${where}: consumer name "${consumer}" is already used by another inbox handler`);
    const maxAttempts = options.maxAttempts ?? this.options.maxAttempts;
    if (!Number.isInteger(maxAttempts) || maxAttempts < 1) throw new OutboxError(`${where}: maxAttempts must be a positive integer`);
    if (options.mode !== undefined && options.mode !== 'transactional' && options.mode !== 'deferred') {
      throw new OutboxError(`${where}: mode must be 'transactional' or 'deferred'`);
    }
    if (options.orderingKey && options.mode !== 'deferred') {
      // In transactional mode deliveries are processed as the broker hands them out.
      throw new OutboxError(`${where}: orderingKey needs mode 'deferred'`);
    }

    const definition: InboxHandlerDefinition = {
      consumer,
      mode: options.mode ?? 'transactional',
      bizKey: options.bizKey,
      messageIdFallback: options.messageIdFallback,
      orderingKey: options.orderingKey,
      maxAttempts,
      invoke: async (payload: unknown, message: ConsumeMessage, headers: Record<string, unknown> | undefined) => {
        const instance = wrapper.instance as Record<string, (...args: unknown[]) => unknown>;
        return instance[methodName](payload, message, headers);
      },
      callDirectly: runsMethodAlone(wrapper.metatype!, methodName, method)
        ? (callback, args) => callAsNest(callback, wrapper.instance, args)
        : undefined,
    };
    this.handlers.set(consumer, definition);
    Reflect.defineMetadata(INBOX_HANDLER_DEFINITION, definition, method);
    Reflect.defineMetadata(RABBIT_HANDLER, { ...rabbit, deserializer: safeDeserializer(rabbit.deserializer) }, method);
  }
}
