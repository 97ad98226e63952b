import { printable } from '../../message/printable';
import { HTTP_HEADER_NAME } from '../../message/message-limits';
import { webhookSecretsProblems } from './standard-webhooks';

/** Where the HTTP transport delivers the messages that name it. */
export interface HttpEndpoint {
  /** `http:` or `https:` URL the messages are POSTed to. Never taken from a message. */
  url: string;
  /** Headers sent with every request (e.g. `authorization`). */
  headers?: Record<string, string>;
  /**
   * How long an attempt may take, answer included, before it fails and is retried. Less than the
   * module's `sendTimeoutMs`; default 5 s, or half of `sendTimeoutMs` where that is less.
   */
  timeoutMs?: number;
  /** A Standard Webhooks secret (`whsec_…`): each attempt then carries a `webhook-signature`. */
  secret?: string;
}

/** Options of `HttpOutboxTransport.for()`. */
export interface HttpOutboxTransportOptions {
  /** The endpoints by name; a message names one as its `exchange`. */
  endpoints: Record<string, HttpEndpoint>;
}

export const DEFAULT_HTTP_TIMEOUT_MS = 5_000;

/**
 * Headers an endpoint may not set: those the transport sets on every attempt, and those about the
 * connection, which Node's fetch refuses on every send (each message would spend its attempts).
 */
const RESERVED_HEADERS = new Set([
  'content-type',
  'content-length',
  'host',
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
  'idempotency-key',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'expect',
]);
/** A header value fetch sends: tab, visible ASCII, space and the Latin-1 range (one byte each). */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** Every problem with the transport's options, each naming the option at fault (secrets never quoted). */
export function httpTransportOptionProblems(options: HttpOutboxTransportOptions): string[] {
  if (!options || typeof options !== 'object' || !options.endpoints || typeof options.endpoints !== 'object') {
    return ['endpoints must be an object of named endpoints: { endpoints: { partner: { url } } }'];
  }
  const names = Object.keys(options.endpoints);
  if (names.length === 0) return ['endpoints must name at least one endpoint'];
  return names.flatMap((name) => endpointProblems(`endpoints.${name}`, options.endpoints[name]));
}

function endpointProblems(where: string, endpoint: HttpEndpoint): string[] {
  if (!endpoint || typeof endpoint !== 'object') return [`${where} must be an object with a url`];
  const problems: string[] = [];
  let url: URL | undefined;
  try {
    url = new URL(endpoint.url);
  } catch {
    problems.push(`${where}.url must be an absolute http: or https: URL`);
  }
  if (url && url.protocol !== 'http:' && url.protocol !== 'https:') problems.push(`${where}.url must be an http: or https: URL`);
  if (url && (url.username || url.password)) problems.push(`${where}.url must not hold credentials: send them in headers`);
  for (const [name, value] of Object.entries(endpoint.headers ?? {})) {
    if (!HTTP_HEADER_NAME.test(name)) problems.push(`${where}.headers: "${printable(name)}" is not an HTTP header name`);
    else if (RESERVED_HEADERS.has(name.toLowerCase())) problems.push(`${where}.headers: ${name} is set by the transport`);
    else if (typeof value !== 'string' || !HEADER_VALUE.test(value))
      problems.push(`${where}.headers.${name} must be a string of tabs, printable ASCII and Latin-1 characters`);
  }
  const { timeoutMs } = endpoint;
  if (timeoutMs !== undefined && (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1))
    problems.push(`${where}.timeoutMs must be a positive integer of milliseconds`);
  if (endpoint.secret !== undefined)
    problems.push(...webhookSecretsProblems([endpoint.secret]).map((problem) => problem.replace(/^secrets\[0\]/, `${where}.secret`)));
  return problems;
}
