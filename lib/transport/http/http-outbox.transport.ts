import { Inject, Injectable, mixin, OnApplicationShutdown, OnModuleInit, Type } from '@nestjs/common';
import { NonRetryableError, OutboxOptionsError, TransportUnavailableError } from '../../errors';
import { printable } from '../../message/printable';
import { OUTBOX_OPTIONS } from '../../naming/injection-tokens';
import { OutboxModuleOptions } from '../../options/outbox-module-options';
import { signWebhook } from './standard-webhooks';
import { AddressProblem, MessageAddress, OutboxTransport, OutgoingMessage, ServerAddress } from '../../message/outbox-transport';
import { DEFAULT_HTTP_TIMEOUT_MS, HttpEndpoint, HttpOutboxTransportOptions, httpTransportOptionProblems } from './http-endpoint';
import { OPEN_AFTER_FAILURES } from './endpoint-circuit';
import { ATTEMPT_HEADER, PUBLISHED_AT_HEADER } from '../delivery-headers';
import { EndpointCircuits } from './endpoint-circuits';
import { responseOutcome, retryAfterMs } from './http-response-outcome';
import { responseStart } from './response-start';

/** How much of an error answer is read, for `last_error`; a 2xx answer's body is read up to this too, then dropped. */
const READ_BYTES = 1_024;
/** Answers that say the endpoint is down or overloaded, not that this message is wrong. */
const DOWN_STATUSES = new Set([429, 502, 503, 504]);

/**
 * Delivers outbox messages by HTTP: each message is POSTed, its payload as the JSON body, to the
 * endpoint its `destination` names, one of those configured here (`publish()` refuses another).
 * A message names an endpoint and never a URL, so stored data cannot point the server at an
 * address the operator did not configure. Every attempt carries the message id as `webhook-id`
 * and `Idempotency-Key`, a `webhook-timestamp`, the attempt number and publish time
 * (`outbox-attempt`, `outbox-published-at`), and, with a secret, a Standard Webhooks
 * `webhook-signature`.
 *
 * 2xx is delivered; 408, 425, 429, 5xx, timeouts and network errors are retried with backoff, no
 * sooner than `Retry-After`; any other answer (redirects are not followed) goes to MANUAL_REQUIRED
 * with the status and the start of the body. Uses Node's `fetch`, with its keep-alive pool.
 *
 * An endpoint that fails five sends in a row without an answer (or with 429, 502, 503, 504) is
 * taken for down: its messages are given back unattempted and one probe is sent after a pause
 * (1 s, doubling to 60 s) until it answers, so a partner's outage does not spend retry budgets.
 *
 * ```ts
 * OutboxModule.forRoot({
 *   transports: {
 *     default: RabbitMqOutboxTransport,
 *     partners: HttpOutboxTransport.for({ endpoints: { logistics: { url: 'https://logistics.example/hooks', secret } } }),
 *   },
 * });
 * await outbox.publish({ type: 'order.shipped', transport: 'partners', destination: 'logistics', payload });
 * ```
 */
@Injectable()
export class HttpOutboxTransport implements OutboxTransport, OnModuleInit, OnApplicationShutdown {
  /** The transport class for these endpoints, checked now: a mistake fails where the module is declared. */
  static for(options: HttpOutboxTransportOptions): Type<HttpOutboxTransport> {
    const problems = httpTransportOptionProblems(options);
    if (problems.length > 0) throw new OutboxOptionsError(problems.map((problem) => `HttpOutboxTransport ${problem}`));
    const configured = new Map(Object.entries(options.endpoints));
    class ConfiguredHttpOutboxTransport extends HttpOutboxTransport {
      protected override readonly configured = configured;

      static optionProblems(moduleOptions: OutboxModuleOptions): string[] {
        return resolveTimeouts(configured, moduleOptions.sendTimeoutMs).problems;
      }
    }
    return mixin(ConfiguredHttpOutboxTransport);
  }

  /** The endpoints as `for()` was given them. */
  protected readonly configured?: ReadonlyMap<string, HttpEndpoint>;
  /** The same with their timeouts resolved, at module init. */
  private readonly endpoints = new Map<string, HttpEndpoint & { timeoutMs: number }>();
  private circuits = new EndpointCircuits([]);
  /** Each endpoint's host and port, for the send spans. */
  private readonly servers = new Map<string, ServerAddress>();

  /**
   * Nest creates it: inject it rather than constructing it.
   * @internal
   */
  constructor(@Inject(OUTBOX_OPTIONS) private readonly options: OutboxModuleOptions) {}

  /** An attempt must end (answered or timed out) before the dispatcher gives up on its batch. */
  onModuleInit(): void {
    if (!this.configured) throw new OutboxOptionsError(['transport: use HttpOutboxTransport.for({ endpoints }), not the bare class']);
    const { endpoints, problems } = resolveTimeouts(this.configured, this.options.sendTimeoutMs);
    if (problems.length > 0) throw new OutboxOptionsError(problems);
    for (const [name, endpoint] of endpoints) {
      this.endpoints.set(name, endpoint);
      const url = new URL(endpoint.url);
      this.servers.set(name, { address: url.hostname, port: url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80 });
    }
    this.circuits = new EndpointCircuits(endpoints.keys());
  }

  /** `messaging.system` of the send spans: Standard Webhooks over HTTP, not a broker. */
  readonly messagingSystem = 'webhook';

  /** The host and port of the endpoint the message names, from its configured URL. */
  serverAddress(message: OutgoingMessage): ServerAddress | undefined {
    return this.servers.get(message.destination);
  }

  isAvailable(): boolean {
    return this.circuits.available;
  }

  onAvailable(listener: () => void): () => void {
    return this.circuits.onAvailable(listener);
  }

  /** Nest lifecycle hook: stops the endpoints' circuit probes. */
  onApplicationShutdown(): void {
    this.circuits.close();
  }

  /** The endpoint must be one of this transport's: a message for another could never be sent. */
  addressProblem(address: MessageAddress): AddressProblem | undefined {
    const names = [...(this.configured?.keys() ?? [])];
    if (address.destination !== undefined && this.configured?.has(address.destination)) return undefined;
    const given = address.destination === undefined ? 'no destination' : `destination ${JSON.stringify(printable(address.destination))}`;
    return { field: 'destination', message: `the HTTP transport sends to a configured endpoint (${names.join(', ')}) named by destination; got ${given}` };
  }

  async send(message: OutgoingMessage): Promise<void> {
    const name = message.destination;
    const endpoint = this.endpoints.get(name);
    if (!endpoint) {
      throw new NonRetryableError(
        `no HTTP endpoint "${printable(name)}" is configured: add it to HttpOutboxTransport.for({ endpoints }) and requeue the message`,
      );
    }
    const circuit = this.circuits.get(name)!;
    const pass = circuit.admit();
    if (pass === 'wait') throw this.down(name);
    const timestamp = Math.floor(Date.now() / 1_000);
    const headers: Record<string, string> = {
      ...endpoint.headers,
      'content-type': 'application/json',
      'webhook-id': message.messageId,
      'idempotency-key': message.messageId,
      'webhook-timestamp': String(timestamp),
      ...traceContextHeaders(message.headers),
    };
    if (this.options.deliveryHeaders) {
      headers[ATTEMPT_HEADER] = String(message.attempts + 1);
      headers[PUBLISHED_AT_HEADER] = message.createdAt.toISOString();
    }
    if (endpoint.secret) headers['webhook-signature'] = signWebhook({ id: message.messageId, timestamp, body: message.payload, secret: endpoint.secret });
    let response: Response;
    let bodyStart: string;
    try {
      // The timeout bounds the answer's body too: the signal aborts its reading.
      response = await fetch(endpoint.url, {
        method: 'POST',
        headers,
        body: message.payload,
        redirect: 'manual',
        signal: AbortSignal.timeout(endpoint.timeoutMs),
      });
      bodyStart = await responseStart(response, READ_BYTES);
    } catch (error) {
      const timedOut = (error as Error)?.name === 'TimeoutError';
      const failure = new Error(timedOut ? `endpoint "${name}" did not answer within ${endpoint.timeoutMs} ms` : `POST to endpoint "${name}" failed`, {
        cause: error,
      });
      throw this.failedAsDown(name, pass, failure);
    }
    const retryAfter = response.headers.get('retry-after');
    const failure = responseOutcome(response.status, retryAfter, bodyStart, name);
    if (failure && DOWN_STATUSES.has(response.status)) throw this.failedAsDown(name, pass, failure, retryAfterMs(retryAfter, Date.now()));
    const wasOpen = circuit.waiting;
    circuit.answered();
    this.circuits.closed(name, wasOpen);
    if (failure) throw failure;
  }

  /**
   * Records a failure that says the endpoint is down. The message's attempt counts while the
   * endpoint is taken for up; once its circuit is open (this failure may open it), or for a
   * probe, the message is given back unattempted.
   */
  private failedAsDown(name: string, pass: 'send' | 'probe', failure: Error, retryAfter?: number): Error {
    const circuit = this.circuits.get(name)!;
    circuit.down(retryAfter);
    this.circuits.paused(name);
    return pass === 'probe' || circuit.waiting ? this.down(name, failure) : failure;
  }

  private down(name: string, cause?: Error): TransportUnavailableError {
    return new TransportUnavailableError(
      `endpoint "${printable(name)}" is taken for down after ${OPEN_AFTER_FAILURES} failed sends in a row; its messages wait, unattempted, until a probe is answered`,
      { cause },
    );
  }
}

/** Each endpoint with its timeout resolved (default 5 s, or half of `sendTimeoutMs` where that is less), and the timeouts not below `sendTimeoutMs`. */
function resolveTimeouts(configured: ReadonlyMap<string, HttpEndpoint>, sendTimeoutMs: number) {
  const endpoints = new Map<string, HttpEndpoint & { timeoutMs: number }>();
  const problems: string[] = [];
  for (const [name, endpoint] of configured) {
    const timeoutMs = endpoint.timeoutMs ?? Math.min(DEFAULT_HTTP_TIMEOUT_MS, Math.floor(sendTimeoutMs / 2));
    if (timeoutMs >= sendTimeoutMs)
      problems.push(`HttpOutboxTransport endpoints.${name}.timeoutMs (${timeoutMs}) must be less than sendTimeoutMs (${sendTimeoutMs})`);
    endpoints.set(name, { ...endpoint, timeoutMs });
  }
  return { endpoints, problems };
}

/** The message's W3C trace context, so that the receiver continues the trace (the other headers are AMQP's). */
function traceContextHeaders(headers: Record<string, unknown>): Record<string, string> {
  const found: Record<string, string> = {};
  for (const name of ['traceparent', 'tracestate']) {
    const value = headers[name];
    // Printable ASCII only: a header value with anything else would make fetch throw.
    if (typeof value === 'string' && /^[\x20-\x7e]{1,512}$/.test(value)) found[name] = value;
  }
  return found;
}
