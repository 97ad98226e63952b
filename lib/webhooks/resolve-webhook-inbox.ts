import { unstorableReason } from '../inbox/storable-text';
import { CONSUMER_NAME_MAX_LENGTH, HTTP_HEADER_NAME, MAX_ATTEMPTS_LIMIT } from '../message/message-limits';
import { WEBHOOK_HEADERS } from '../transport/http/standard-webhooks';
import { WebhookInboxDefinition } from './webhook-inbox-definition';
import { WebhookInboxOptions } from './webhook-inbox-options';
import type { WebhookRequest } from './webhook-request';

/** What a `@WebhookInbox()` falls back on, from the module's options. */
export interface WebhookInboxDefaults {
  consumer: string;
  maxAttempts: number;
  maxBodyBytes: number;
}

/** The message id header of the Standard Webhooks scheme, the default id source. */
const STANDARD_WEBHOOK_ID_HEADER = WEBHOOK_HEADERS.id;
/** Headers kept by default: the Standard Webhooks ones, so a stored request can be verified again. */
const DEFAULT_KEPT_HEADERS: readonly string[] = Object.values(WEBHOOK_HEADERS);

const OPTION_NAMES = new Set(['outbox', 'consumer', 'messageId', 'type', 'bizKey', 'orderingKey', 'maxAttempts', 'status', 'maxBodyBytes', 'headers']);

/** A `@WebhookInbox()`'s options checked and resolved, or every problem with them, each naming its option. */
export function resolveWebhookInbox(
  options: WebhookInboxOptions,
  defaults: WebhookInboxDefaults,
  where: string,
): { definition?: WebhookInboxDefinition; problems: string[] } {
  const problems: string[] = [];
  const consumer = options.consumer ?? defaults.consumer;
  if (typeof consumer !== 'string' || consumer.length === 0 || consumer.length > CONSUMER_NAME_MAX_LENGTH || unstorableReason(consumer)) {
    problems.push(
      `consumer must be a non-empty string of at most ${CONSUMER_NAME_MAX_LENGTH} characters, well-formed and without NUL (the inbox table's column)`,
    );
  }
  for (const key of Object.keys(options ?? {})) {
    if (!OPTION_NAMES.has(key)) problems.push(`${key} is not an option of @WebhookInbox()`);
  }
  const messageId = resolveMessageId(options.messageId ?? { header: STANDARD_WEBHOOK_ID_HEADER }, problems);
  let type: WebhookInboxDefinition['type'];
  if (typeof options.type === 'string') {
    const fixed = options.type;
    type = () => fixed;
  } else if (typeof options.type === 'function') type = options.type;
  else if (options.type !== undefined) problems.push('type must be a string or a function of the request');
  for (const name of ['bizKey', 'orderingKey'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'function') problems.push(`${name} must be a function of the request`);
  }
  const maxAttempts = options.maxAttempts ?? defaults.maxAttempts;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1 || maxAttempts > MAX_ATTEMPTS_LIMIT)
    problems.push(`maxAttempts must be an integer from 1 to ${MAX_ATTEMPTS_LIMIT}`);
  const status = options.status ?? 200;
  if (status !== 200 && status !== 202) problems.push('status must be 200 or 202');
  const maxBodyBytes = options.maxBodyBytes ?? defaults.maxBodyBytes;
  if (!Number.isSafeInteger(maxBodyBytes) || maxBodyBytes < 1) problems.push('maxBodyBytes must be a positive integer');
  const headers = options.headers ?? DEFAULT_KEPT_HEADERS;
  if (!Array.isArray(headers) || !headers.every((name) => typeof name === 'string' && HTTP_HEADER_NAME.test(name))) {
    problems.push('headers must be an array of HTTP header names');
  }
  if (problems.length > 0 || !messageId) return { problems: problems.map((problem) => `${where}: ${problem}`) };
  return {
    problems: [],
    definition: {
      consumer,
      where,
      messageId: messageId.extract,
      messageIdSource: messageId.source,
      type,
      bizKey: options.bizKey,
      orderingKey: options.orderingKey,
      maxAttempts,
      maxBodyBytes,
      keptHeaders: new Set(['content-type', ...headers.map((name) => name.toLowerCase())]),
    },
  };
}

function resolveMessageId(source: unknown, problems: string[]): { extract: (request: WebhookRequest) => unknown; source: string } | undefined {
  if (typeof source === 'function') return { extract: source as (request: WebhookRequest) => unknown, source: 'the messageId function' };
  if (source && typeof source === 'object') {
    const { header, bodyField } = source as { header?: unknown; bodyField?: unknown };
    if (typeof header === 'string' && HTTP_HEADER_NAME.test(header) && bodyField === undefined) {
      const name = header.toLowerCase();
      // Own headers only: a header named `constructor` must not read Object.prototype's.
      return { extract: (request) => (Object.hasOwn(request.headers, name) ? request.headers[name] : undefined), source: `header "${name}"` };
    }
    if (typeof bodyField === 'string' && bodyField.length > 0 && header === undefined) {
      const path = bodyField.split('.');
      return { extract: (request) => fieldAt(request.body, path), source: `body field "${bodyField}"` };
    }
  }
  problems.push("messageId must be { header: 'name' }, { bodyField: 'path.to.id' } or a function of the request");
  return undefined;
}

/** The value at a dotted path of a parsed body; numbers are ids too (`"id": 42`). */
function fieldAt(body: unknown, path: string[]): unknown {
  let value = body;
  for (const key of path) {
    if (value === null || typeof value !== 'object' || !Object.prototype.hasOwnProperty.call(value, key)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return typeof value === 'number' && Number.isFinite(value) ? String(value) : value;
}
