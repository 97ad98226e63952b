import { CallHandler, ExecutionContext, Injectable, NestInterceptor, Optional } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { from, Observable } from 'rxjs';
import { OutboxError } from '../errors';
import { WEBHOOK_INBOX_DEFINITION, WebhookInboxDefinition } from './webhook-inbox-definition';
import { WebhookIntake } from './webhook-intake.service';
import { outboxServiceOf } from '../naming/outbox-service-of';
import { getWebhookIntakeToken } from './webhook-intake.service';

/**
 * Applied by `@WebhookInbox()`: stores the request and answers it, never calling on to the
 * method, which the deferred inbox worker runs later (without interceptors). A route of a named
 * outbox is stored by that outbox's `WebhookIntake`.
 */
@Injectable()
export class WebhookInboxInterceptor implements NestInterceptor {
  private readonly namedIntakes = new Map<string, WebhookIntake>();

  constructor(
    private readonly moduleRef: ModuleRef,
    /** The default outbox's; absent from an application that configures only named outboxes. */
    @Optional() private readonly intake?: WebhookIntake,
  ) {}

  intercept(context: ExecutionContext, _next: CallHandler): Observable<unknown> {
    const definition = Reflect.getMetadata(WEBHOOK_INBOX_DEFINITION, context.getHandler()) as WebhookInboxDefinition | undefined;
    if (!definition || context.getType() !== 'http') {
      throw new OutboxError(`@WebhookInbox on ${context.getClass().name} was not set up at start-up; is OutboxModule imported, and is it an HTTP route?`);
    }
    const http = context.switchToHttp();
    const intake = outboxServiceOf(this.moduleRef, this.namedIntakes, definition.outbox, this.intake, getWebhookIntakeToken, definition.where);
    return from(intake.receive(definition, http.getRequest(), http.getResponse()));
  }
}
