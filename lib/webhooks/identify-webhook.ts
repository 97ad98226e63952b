import { InboxRow } from '../dialects/inbox-dialect';
import { bizKeyMessageId } from '../inbox/identify-delivery';
import { printable } from '../message/printable';
import { storableText, unstorableReason } from '../inbox/storable-text';
import { describeError } from '../retry/error-classifier';
import type { WebhookInboxDefinition } from './webhook-inbox-definition';
import { parseWebhookBody, WebhookRequest } from './webhook-request';

const KEY_MAX = 255;

/** What a webhook request becomes: an inbox row, or the answer that refuses it. */
export type IdentifiedWebhook = { row: InboxRow; request: WebhookRequest } | { refusal: { status: 400 | 413; reason: string } };

/** The request as it arrived: method, path, every header, the body as received. */
export interface ArrivedRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  rawBody: Buffer;
}

/**
 * Decides whether a webhook request can be stored, and as what: its dedupe identity (message id,
 * or `type` + `bizKey`), its ordering key and the headers kept. Refuses, with the status to
 * answer, a body over the limit (413), and a body that does not parse as its content type or a
 * request without a storable identity (400): the sender sees the refusal and keeps the event.
 */
export function identifyWebhook(definition: WebhookInboxDefinition, arrived: ArrivedRequest): IdentifiedWebhook {
  const { rawBody } = arrived;
  if (rawBody.length > definition.maxBodyBytes) {
    return refuse(413, `the body has ${rawBody.length} bytes, more than the ${definition.maxBodyBytes} that consumer "${definition.consumer}" takes`);
  }
  const parsed = parseWebhookBody(rawBody, arrived.headers['content-type']);
  if (!parsed.ok) return refuse(400, parsed.reason);
  const request: WebhookRequest = { method: arrived.method, url: arrived.url, headers: arrived.headers, body: parsed.body, rawBody };

  const keys: Record<'messageId' | 'type' | 'bizKey' | 'orderingKey', string | null> = { messageId: null, type: null, bizKey: null, orderingKey: null };
  for (const name of ['messageId', 'type', 'bizKey', 'orderingKey'] as const) {
    const extractor = definition[name];
    if (!extractor) continue;
    const taken = takeKey(name, extractor, request);
    if (taken !== null && typeof taken === 'object') return refuse(400, taken.reason);
    keys[name] = taken;
  }
  const type = keys.type ?? '';
  const messageId = keys.messageId ?? (keys.bizKey ? bizKeyMessageId(type, keys.bizKey) : null);
  if (messageId === null)
    return refuse(
      400,
      `the request has no message id (from ${definition.messageIdSource}) and no bizKey for consumer "${definition.consumer}" to dedupe it by`,
    );
  if (messageId.length > KEY_MAX) return refuse(400, `the message id is longer than ${KEY_MAX} characters`);

  const kept: Record<string, string> = {};
  for (const name of definition.keptHeaders) {
    // Own headers only: a kept header named `constructor` must not read Object.prototype's.
    if (Object.hasOwn(arrived.headers, name)) kept[name] = storableText(arrived.headers[name]);
  }
  return {
    request,
    row: {
      consumer: definition.consumer,
      messageId,
      type,
      bizKey: keys.bizKey,
      orderingKey: keys.orderingKey,
      // Cut before made storable: a cut through a surrogate pair leaves a lone half.
      exchange: storableText(arrived.method.slice(0, KEY_MAX)),
      routingKey: storableText(arrived.url.slice(0, KEY_MAX)),
      payload: rawBody.toString('utf8'),
      headers: JSON.stringify(kept),
      maxAttempts: definition.maxAttempts,
    },
  };
}

/** Runs an extractor: its value, null when it gives none, or why what it gave cannot be a key. */
function takeKey(name: string, extractor: (request: WebhookRequest) => unknown, request: WebhookRequest): string | null | { reason: string } {
  let value: unknown;
  try {
    value = extractor(request);
  } catch (error) {
    return { reason: `the ${name} extractor threw: ${printable(describeError(error, 300))}` };
  }
  if (value === undefined || value === null || value === '') return null;
  if (typeof value !== 'string') return { reason: `${name} is a ${typeof value}, not a string` };
  const unstorable = unstorableReason(value);
  if (unstorable) return { reason: `${name} ${unstorable}: "${printable(value)}"` };
  if (value.length > KEY_MAX) return { reason: `${name} is longer than ${KEY_MAX} characters` };
  return value;
}

function refuse(status: 400 | 413, reason: string): IdentifiedWebhook {
  return { refusal: { status, reason } };
}
