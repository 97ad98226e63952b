import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import type { ConsumeMessage } from 'amqplib';
import { from, lastValueFrom, Observable } from 'rxjs';
import { OutboxError } from '../errors';
import type { HandlerMethod } from './direct-call';
import { INBOX_HANDLER_DEFINITION } from './inbox.constants';
import { takeReplay } from './deferred-replay';
import { InboxHandlerDefinition } from './inbox-handler-options';
import { InboxService } from './inbox.service';

/**
 * Applied by `@InboxHandler()`. golevelup calls handlers through Nest's context creator, so the
 * interceptor sees `[payload, ConsumeMessage, headers]` and decides whether the business method
 * runs at all. It runs the method through the rest of Nest's chain (pipes, later interceptors),
 * or calls it itself where that chain would run nothing else (`runsMethodAlone`). The deferred
 * worker runs stored rows through the same chain; for those it runs the rest of the chain in the
 * worker's transaction (`deferred-replay.ts`).
 */
@Injectable()
export class InboxInterceptor implements NestInterceptor {
  constructor(private readonly inbox: InboxService) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const definition = Reflect.getMetadata(INBOX_HANDLER_DEFINITION, context.getHandler()) as InboxHandlerDefinition | undefined;
    if (!definition) {
      throw new OutboxError(`@InboxHandler on ${context.getClass().name} was not set up at start-up; is OutboxModule imported?`);
    }
    const [payload, message] = context.getArgs() as [unknown, ConsumeMessage];
    const runRest = () => runBusinessMethod(definition, context, next);
    // A deferred row the worker is running: the delivery was stored when it arrived.
    const replay = takeReplay(message);
    if (replay) return from(replay(runRest));
    return from(this.inbox.receive(definition, payload, message, runRest));
  }
}

/** The rest of Nest's chain, which ends in the business method; the method alone when that is all the chain would run. */
function runBusinessMethod(definition: InboxHandlerDefinition, context: ExecutionContext, next: CallHandler): Promise<unknown> {
  if (definition.callDirectly) return definition.callDirectly(context.getHandler() as HandlerMethod, context.getArgs());
  return lastValueFrom(next.handle(), { defaultValue: undefined });
}
