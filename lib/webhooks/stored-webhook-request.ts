import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum';
import { ClaimedInboxMessage } from '../dialects/inbox-dialect';
import { NonRetryableError } from '../errors';
import { flatHeaders, parseWebhookBody, WebhookRequest } from './webhook-request';

/** The parameter decorators a `@WebhookInbox()` method may use: they read what the row keeps. */
export const STORED_REQUEST_PARAMETERS: ReadonlySet<RouteParamtypes> = new Set([
  RouteParamtypes.REQUEST,
  RouteParamtypes.BODY,
  RouteParamtypes.RAW_BODY,
  RouteParamtypes.HEADERS,
]);

/** The request as it arrived, rebuilt from its stored row. */
export function storedWebhookRequest(row: ClaimedInboxMessage): WebhookRequest {
  const headers = flatHeaders(row.headers as Record<string, string>);
  const rawBody = Buffer.from(row.payload, 'utf8');
  const parsed = parseWebhookBody(rawBody, headers['content-type']);
  if (!parsed.ok) throw new NonRetryableError(`the stored body does not parse any more: ${parsed.reason}`);
  return { method: row.exchange || 'POST', url: row.routingKey, headers, body: parsed.body, rawBody };
}

/**
 * Resolves a `@WebhookInbox()` method's parameters from the stored request, as Nest's
 * `RouteParamsFactory` does from a live one; the context creator passes the call's arguments,
 * `[request]`.
 */
export class StoredRequestParamsFactory {
  exchangeKeyForValue(type: RouteParamtypes, data: unknown, args: unknown[]): unknown {
    const request = args[0] as WebhookRequest;
    switch (type) {
      case RouteParamtypes.REQUEST:
        return request;
      case RouteParamtypes.BODY:
        return typeof data === 'string' && request.body && typeof request.body === 'object' ? (request.body as Record<string, unknown>)[data] : request.body;
      case RouteParamtypes.RAW_BODY:
        return request.rawBody;
      case RouteParamtypes.HEADERS:
        // Own headers only: `@Headers('constructor')` must not read Object.prototype's.
        if (typeof data !== 'string') return request.headers;
        return Object.hasOwn(request.headers, data.toLowerCase()) ? request.headers[data.toLowerCase()] : undefined;
      default:
        return undefined;
    }
  }
}
