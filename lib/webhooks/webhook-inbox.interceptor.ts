import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { from, Observable } from 'rxjs';
import { OutboxError } from '../errors';
import { WEBHOOK_INBOX_DEFINITION } from './webhook.constants';
import { WebhookInboxDefinition } from './webhook-inbox-definition';
import { WebhookIntake } from './webhook-intake.service';

/**
 * Applied by `@WebhookInbox()`: stores the request and answers it, never calling on to the
 * method, which the deferred inbox worker runs later (without interceptors).
 */
@Injectable()
export class WebhookInboxInterceptor implements NestInterceptor {
  constructor(private readonly intake: WebhookIntake) {}

  intercept(context: ExecutionContext, _next: CallHandler): Observable<unknown> {
    const definition = Reflect.getMetadata(WEBHOOK_INBOX_DEFINITION, context.getHandler()) as WebhookInboxDefinition | undefined;
    if (!definition || context.getType() !== 'http') {
      throw new OutboxError(`@WebhookInbox on ${context.getClass().name} was not set up at start-up; is OutboxModule imported, and is it an HTTP route?`);
    }
    const http = context.switchToHttp();
    return from(this.intake.receive(definition, http.getRequest(), http.getResponse()));
  }
}
