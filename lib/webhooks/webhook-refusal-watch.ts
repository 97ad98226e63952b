import { Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { HttpAdapterHost, ModuleRef } from '@nestjs/core';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { printable } from '../message/printable';
import { WEBHOOK_REFUSALS } from './refusal-log';
import { REFUSAL_LOGGED } from './webhook-route';
import { WebhookInboxExplorer } from './webhook-inbox.explorer';

/**
 * Logs what refuses a webhook before the library sees it: the body parser's 400 (JSON that does
 * not parse), 413 (a body over its limit) and 415 (a charset it does not take), an application's
 * own guard or middleware. Nest logs none of them on one line (it logs a 413 with its stack), so
 * a sender's failing deliveries would be invisible in the log. It watches the HTTP server's
 * responses to `@WebhookInbox()` routes and logs each 4xx the library did not log itself,
 * through the same rate-limited log.
 */
@Injectable()
export class WebhookRefusalWatch implements OnApplicationBootstrap, OnApplicationShutdown {
  private server?: Server;
  private readonly onRequest = (request: IncomingMessage, response: ServerResponse) => this.watch(request, response);

  constructor(
    private readonly moduleRef: ModuleRef,
    private readonly explorer: WebhookInboxExplorer,
  ) {}

  onApplicationBootstrap(): void {
    if (this.explorer.routes.length === 0) return;
    let host: HttpAdapterHost | undefined;
    try {
      host = this.moduleRef.get(HttpAdapterHost, { strict: false });
    } catch {
      return;
    }
    const server = host?.httpAdapter?.getHttpServer?.() as Server | undefined;
    if (typeof server?.on !== 'function') return;
    this.server = server;
    server.on('request', this.onRequest);
  }

  onApplicationShutdown(): void {
    this.server?.off('request', this.onRequest);
    this.server = undefined;
  }

  private watch(request: IncomingMessage, response: ServerResponse): void {
    const path = (request.url ?? '').split('?')[0];
    const route = this.explorer.routes.find((candidate) => candidate.pattern.test(path));
    if (!route) return;
    response.once('finish', () => {
      const status = response.statusCode;
      if (status < 400 || status >= 500 || (request as unknown as Record<symbol, unknown>)[REFUSAL_LOGGED]) return;
      WEBHOOK_REFUSALS.refused(
        printable(route.consumer),
        status,
        `${printable(request.method)} ${printable(path)} was refused before the inbox saw it (the body parser: a body over its limit, JSON that does not parse; or a guard or middleware of the application)`,
      );
    });
  }
}
