import { CallHandler, ExecutionContext, Injectable, NestInterceptor, Optional } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { ConsumeMessage } from 'amqplib';
import { from, lastValueFrom, Observable } from 'rxjs';
import { OutboxError } from '../errors';
import { takeReplay } from './deferred-replay';
import { HandlerMethod, INBOX_HANDLER_DEFINITION, InboxHandlerDefinition } from './inbox-handler-options';
import { InboxService } from './inbox.service';
import { outboxServiceOf } from '../naming/outbox-service-of';
import { getInboxServiceToken } from './inbox.service';

/**
 * Applied by `@InboxHandler()`. golevelup calls handlers through Nest's context creator, so the
 * interceptor sees `[payload, ConsumeMessage, headers]` and decides whether the business method
 * runs at all. It runs the method through the rest of Nest's chain (pipes, later interceptors),
 * or calls it itself where that chain would run nothing else (`runsMethodAlone`). The deferred
 * worker runs stored rows through the same chain; for those it runs the rest of the chain in the
 * worker's transaction (`deferred-replay.ts`). A handler of a named outbox is received by that
 * outbox's `InboxService`.
 */
@Injectable()
export class InboxInterceptor implements NestInterceptor {
  private readonly namedInboxes = new Map<string, InboxService>();

  constructor(
    private readonly moduleRef: ModuleRef,
    /** The default outbox's; absent from an application that configures only named outboxes. */
    @Optional() private readonly inbox?: InboxService,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const definition = Reflect.getMetadata(INBOX_HANDLER_DEFINITION, context.getHandler()) as InboxHandlerDefinition | undefined;
    if (!definition) {
      throw new OutboxError(`@InboxHandler on ${context.getClass().name} was not set up at start-up; is OutboxModule imported?`);
    }
    const [payload, message] = context.getArgs<[unknown, ConsumeMessage]>();
    const runRest = () => runBusinessMethod(definition, context, next);
    // A deferred row the worker is running: the delivery was stored when it arrived.
    const replay = takeReplay(message);
    if (replay) return from(replay(runRest));
    const inbox = outboxServiceOf(
      this.moduleRef,
      this.namedInboxes,
      definition.outbox,
      this.inbox,
      getInboxServiceToken,
      `@InboxHandler on ${context.getClass().name}`,
    );
    return from(inbox.receive(definition, payload, message, runRest));
  }
}

/** The rest of Nest's chain, which ends in the business method; the method alone when that is all the chain would run. */
function runBusinessMethod(definition: InboxHandlerDefinition, context: ExecutionContext, next: CallHandler): Promise<unknown> {
  if (definition.callDirectly) return definition.callDirectly(context.getHandler() as HandlerMethod, context.getArgs());
  return lastValueFrom(next.handle(), { defaultValue: undefined });
}
