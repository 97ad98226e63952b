import { TransactionHost } from '@nestjs-cls/transactional';
import { Inject, Injectable, OnModuleInit, Optional, Scope } from '@nestjs/common';
import { CUSTOM_ROUTE_ARGS_METADATA, ROUTE_ARGS_METADATA } from '@nestjs/common/constants';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { ExternalContextCreator } from '@nestjs/core/helpers/external-context-creator';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper';
import { ClaimedInboxMessage } from '../dialects/inbox-dialect';
import { OutboxError } from '../errors';
import { decoratedMethods } from '../inbox/decorated-methods';
import { InboxConsumers } from '../inbox/inbox-consumers';
import { DeferredReplay } from '../inbox/deferred-replay';
import { markingMethodErrors } from '../inbox/pipe-rejection';
import { OUTBOX_OPTIONS } from '../naming/injection-tokens';
import { OutboxModuleOptions } from '../options/outbox-module-options';
import { resolveWebhookInbox } from './resolve-webhook-inbox';
import { STORED_REQUEST_PARAMETERS, storedWebhookRequest, StoredRequestParamsFactory } from './stored-webhook-request';
import { WEBHOOK_INBOX_DEFINITION } from './webhook-inbox-definition';
import { WEBHOOK_INBOX_METADATA, WebhookInboxOptions } from './webhook-inbox-options';
import { webhookRoutePattern } from './webhook-route';
import { OUTBOX_TRANSACTION_HOST, transactionConnectionHint } from '../naming/outbox-transaction-host';
import { OutboxIdentity } from '../naming/outbox-identity';
import { chosenOutbox, configuredOutboxes } from '../naming/configured-outboxes';

/** Calls a `@WebhookInbox()` method as Nest would, with its pipes and parameters, on a stored request. */
type StoredRequestCall = (request: unknown) => Promise<unknown>;

/**
 * Finds `@WebhookInbox()` routes at module init, checks their options and parameters, and
 * registers each as a deferred inbox consumer whose stored requests the inbox worker runs
 * through the method's pipes and parameter decorators (not its guards, which ran when the
 * request arrived, nor its interceptors, which serve HTTP requests).
 */
@Injectable()
export class WebhookInboxExplorer implements OnModuleInit {
  /** This outbox's `@WebhookInbox()` routes: what a request's path ends with, and the consumer. */
  readonly routes: { pattern: RegExp; consumer: string }[] = [];

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly contextCreator: ExternalContextCreator,
    @Inject(OUTBOX_OPTIONS) private readonly options: OutboxModuleOptions,
    private readonly consumers: InboxConsumers,
    private readonly identity: OutboxIdentity,
    @Optional() @Inject(OUTBOX_TRANSACTION_HOST) private readonly transactionHost?: TransactionHost,
  ) {}

  onModuleInit(): void {
    const configured = configuredOutboxes(this.discovery);
    for (const { wrapper, methodName, method, options } of decoratedMethods<WebhookInboxOptions>(
      this.discovery.getControllers(),
      this.scanner,
      WEBHOOK_INBOX_METADATA,
    )) {
      const where = `@WebhookInbox on ${(wrapper.metatype as { name: string }).name}.${methodName}`;
      // Each outbox's explorer sets up its own routes; every one checks that each route's outbox exists.
      if (chosenOutbox(where, options.outbox, configured) === this.identity.name) this.register(wrapper, methodName, method, options, where);
    }
  }

  private register(wrapper: InstanceWrapper, methodName: string, method: (...args: unknown[]) => unknown, options: WebhookInboxOptions, where: string): void {
    const classRef = wrapper.metatype as object & { name: string };
    if (!this.transactionHost) {
      throw new OutboxError(
        `${where} runs its method in a transaction: register ClsModule with ClsPluginTransactional (@nestjs-cls/transactional)${transactionConnectionHint(this.identity)}`,
      );
    }
    if (wrapper.scope === Scope.REQUEST || wrapper.scope === Scope.TRANSIENT || !wrapper.isDependencyTreeStatic()) {
      throw new OutboxError(`${where}: the controller must be a singleton (its method runs later, outside any request)`);
    }
    assertStoredRequestParameters(classRef, methodName, where);
    const { definition, problems } = resolveWebhookInbox(
      options,
      { consumer: `${classRef.name}.${methodName}`, maxAttempts: this.options.maxAttempts, maxBodyBytes: this.options.inboxMaxBodyBytes },
      where,
    );
    if (!definition) throw new OutboxError(problems.join('; '));
    definition.outbox = this.identity.name;
    this.consumers.claimName(definition.consumer, where);
    Reflect.defineMetadata(WEBHOOK_INBOX_DEFINITION, definition, method);
    this.routes.push({ pattern: webhookRoutePattern(classRef, method), consumer: definition.consumer });

    let call: StoredRequestCall | undefined;
    this.consumers.registerDeferred({
      consumer: definition.consumer,
      messagingSystem: 'webhook',
      runStored: async (row: ClaimedInboxMessage, replay: DeferredReplay) => {
        const request = storedWebhookRequest(row);
        // Built at the first run, long after every enhancer (global pipes included) is registered.
        call ??= this.storedRequestCall(wrapper.instance as object, methodName, method);
        await replay(() => call!(request));
      },
    });
  }

  private storedRequestCall(instance: object, methodName: string, method: (...args: unknown[]) => unknown): StoredRequestCall {
    return this.contextCreator.create(
      instance,
      // What the method throws is told apart from what its pipes throw (see judgedPipeRejection).
      markingMethodErrors(method),
      methodName,
      ROUTE_ARGS_METADATA,
      new StoredRequestParamsFactory(),
      undefined,
      undefined,
      { guards: false, interceptors: false, filters: false },
      'http',
    ) as StoredRequestCall;
  }
}

/** Refuses at start-up a parameter the stored request cannot give (the response, the route's params, the session…). */
function assertStoredRequestParameters(classRef: object, methodName: string, where: string): void {
  const parameters = (Reflect.getMetadata(ROUTE_ARGS_METADATA, classRef, methodName) ?? {}) as Record<string, unknown>;
  for (const key of Object.keys(parameters)) {
    // Keys are `type:index`, or `<CUSTOM_ROUTE_ARGS_METADATA>…:index` for custom decorators.
    if (key.includes(CUSTOM_ROUTE_ARGS_METADATA)) continue;
    if (!STORED_REQUEST_PARAMETERS.has(Number(key.split(':')[0]))) {
      throw new OutboxError(
        `${where}: the method runs later, with the stored request, so its parameters can be @Body(), @RawBody(), @Headers() (the kept ones), @Req() or custom decorators; not @Res(), @Param(), @Query(), @Ip(), @Session() or files`,
      );
    }
  }
}
