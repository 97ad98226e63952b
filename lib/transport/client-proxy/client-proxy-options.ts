import type { InjectionToken } from '@nestjs/common';

/** Options of `ClientProxyOutboxTransport.for()`. */
export interface ClientProxyOutboxTransportOptions {
  /**
   * The injection token of a `ClientProxy` the application registers: the `name` given to
   * `ClientsModule.register()`, or the token of a provider of its own. Looked up in every module
   * at start-up; the application keeps owning the client (its options, connecting, closing).
   */
  client: InjectionToken;
  /**
   * How long one send may take, connecting included, before it fails and is retried. Less than
   * the module's `sendTimeoutMs`; default 5 s, or half of `sendTimeoutMs` where that is less.
   */
  timeoutMs?: number;
}

export const DEFAULT_CLIENT_PROXY_TIMEOUT_MS = 5_000;

/** Every problem with the transport's own options, each naming the option at fault. */
export function clientProxyTransportOptionProblems(options: ClientProxyOutboxTransportOptions): string[] {
  if (!options || typeof options !== 'object') return ['options must be an object: { client: <injection token of a ClientProxy> }'];
  const problems: string[] = [];
  const { client, timeoutMs } = options;
  const isToken = (typeof client === 'string' && client.length > 0) || typeof client === 'symbol' || typeof client === 'function';
  if (!isToken) {
    problems.push('client must be the injection token of a ClientProxy: the name given to ClientsModule.register(), a symbol or a class');
  }
  if (timeoutMs !== undefined && (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1)) problems.push('timeoutMs must be a positive integer of milliseconds');
  return problems;
}

/**
 * The send timeout, resolved against the module's `sendTimeoutMs`: a send must end (sent or
 * failed) before the dispatcher gives up on its batch, or a late success would be retried.
 */
export function resolveClientProxyTimeout(timeoutMs: number | undefined, sendTimeoutMs: number): { timeoutMs: number; problems: string[] } {
  const resolved = timeoutMs ?? Math.min(DEFAULT_CLIENT_PROXY_TIMEOUT_MS, Math.floor(sendTimeoutMs / 2));
  const problems = resolved >= sendTimeoutMs ? [`ClientProxyOutboxTransport timeoutMs (${resolved}) must be less than sendTimeoutMs (${sendTimeoutMs})`] : [];
  return { timeoutMs: resolved, problems };
}
