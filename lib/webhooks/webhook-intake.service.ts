import { HttpException, Inject, Injectable, Logger, ServiceUnavailableException } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { InboxDialect } from '../dialects/inbox-dialect';
import { InboxWakeup } from '../inbox/inbox-wakeup';
import { OUTBOX_EVENTS } from '../observability/outbox-events';
import { printable } from '../message/printable';
import { INBOX_DIALECT, OUTBOX_DATA_SOURCE, OUTBOX_OPTIONS } from '../naming/injection-tokens';
import { OutboxModuleOptions } from '../options/outbox-module-options';
import { withStatementDeadline } from '../dialects/statement-deadline';
import { describeError } from '../retry/error-classifier';
import { ArrivedRequest, identifyWebhook } from './identify-webhook';
import { WebhookInboxDefinition } from './webhook-inbox-definition';
import { rawBodyOf } from './raw-body';
import { WEBHOOK_REFUSALS } from './refusal-log';
import { markRefusalLogged } from './webhook-route';
import { flatHeaders } from './webhook-request';
import { OutboxIdentity } from '../naming/outbox-identity';
import { outboxToken, type OutboxToken } from '../naming/outbox-name';

/** What the sender is told to wait before retrying a request the inbox could not store. */
const RETRY_AFTER_SECONDS = 5;

/** The parts of an Express or Fastify request the intake reads. */
interface LiveRequest {
  method?: string;
  originalUrl?: string;
  url?: string;
  headers?: Record<string, string | string[] | undefined>;
  rawBody?: Buffer;
  body?: unknown;
}

/** The parts of an Express or Fastify response the intake writes. */
interface LiveResponse {
  setHeader?(name: string, value: string): unknown;
  header?(name: string, value: string): unknown;
}

/**
 * Stores webhook requests for `@WebhookInbox()` routes: one INSERT of a PENDING inbox row (none
 * for a duplicate), then the answer. Never answers 2xx for what did not commit: a request that
 * could not be stored, or not within `statementTimeoutMs`, gets 503 with `Retry-After`, so the
 * sender tries again.
 */
@Injectable()
export class WebhookIntake {
  private readonly logger = new Logger('WebhookInbox');

  constructor(
    @Inject(OUTBOX_DATA_SOURCE) private readonly dataSource: DataSource,
    @Inject(INBOX_DIALECT) private readonly dialect: InboxDialect,
    @Inject(OUTBOX_OPTIONS) private readonly options: OutboxModuleOptions,
    private readonly wakeup: InboxWakeup,
    private readonly identity: OutboxIdentity,
  ) {}

  async receive(definition: WebhookInboxDefinition, request: LiveRequest, response: LiveResponse): Promise<{ received: true }> {
    let arrived: ArrivedRequest;
    try {
      arrived = this.arrived(request);
    } catch (error) {
      // Nest logs no HttpException: a body it did not keep would otherwise be refused unseen.
      const status = error instanceof HttpException ? error.getStatus() : 500;
      WEBHOOK_REFUSALS.refused(printable(definition.consumer), status, printable(error instanceof Error ? error.message : String(error), 500));
      markRefusalLogged(request);
      throw error;
    }
    const identified = identifyWebhook(definition, arrived);
    if ('refusal' in identified) {
      const { status, reason } = identified.refusal;
      WEBHOOK_REFUSALS.refused(printable(definition.consumer), status, printable(reason, 500));
      markRefusalLogged(request);
      throw new HttpException({ statusCode: status, message: reason }, status);
    }
    const { row } = identified;
    this.identity.emit(OUTBOX_EVENTS.received, () => ({ consumer: row.consumer, messageId: row.messageId, type: row.type }));
    let stored: boolean;
    try {
      stored = await withStatementDeadline(this.options.statementTimeoutMs, () => this.dialect.insertPending(this.dataSource, row));
    } catch (error) {
      this.logger.error(`${printable(definition.consumer)} could not store message ${printable(row.messageId)}, answered 503: ${describeError(error, 500)}`);
      setHeader(response, 'Retry-After', String(RETRY_AFTER_SECONDS));
      throw new ServiceUnavailableException('the webhook could not be stored; retry later');
    }
    if (stored) this.wakeup.wake();
    else this.identity.emit(OUTBOX_EVENTS.duplicate, () => ({ consumer: row.consumer, messageId: row.messageId, type: row.type }));
    return { received: true };
  }

  private arrived(request: LiveRequest): ArrivedRequest {
    const url = request.originalUrl ?? request.url ?? '';
    return {
      method: request.method ?? 'POST',
      url: url.split('?')[0],
      headers: flatHeaders(request.headers ?? {}),
      rawBody: rawBodyOf(request, '@WebhookInbox()'),
    };
  }
}

function setHeader(response: LiveResponse, name: string, value: string): void {
  if (typeof response?.setHeader === 'function') response.setHeader(name, value);
  else if (typeof response?.header === 'function') response.header(name, value);
}

/** Token of the outbox `name`'s `WebhookIntake` (the class itself for the default outbox). */
export function getWebhookIntakeToken(name?: string): OutboxToken<WebhookIntake> {
  return outboxToken(WebhookIntake, 'WebhookIntake', name);
}
