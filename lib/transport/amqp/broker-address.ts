import type { ServerAddress } from '../../message/outbox-transport';

/** A broker URI as golevelup takes it: a URL string, or amqplib's connect options. */
type BrokerUri = string | { hostname?: string; port?: number; protocol?: string };

/**
 * The broker golevelup connects to, from its configured URI, for spans' `server.address`: only
 * where there is one URI (with several, which node holds the connection is not known here).
 */
export function brokerAddress(uri: BrokerUri | BrokerUri[] | undefined): ServerAddress | undefined {
  const only = Array.isArray(uri) ? (uri.length === 1 ? uri[0] : undefined) : uri;
  if (only === undefined) return undefined;
  if (typeof only !== 'string') return only.hostname ? { address: only.hostname, port: only.port ?? defaultPort(only.protocol) } : undefined;
  try {
    const url = new URL(only);
    return url.hostname ? { address: url.hostname, port: url.port ? Number(url.port) : defaultPort(url.protocol) } : undefined;
  } catch {
    return undefined;
  }
}

function defaultPort(protocol: string | undefined): number {
  return protocol?.startsWith('amqps') ? 5671 : 5672;
}
