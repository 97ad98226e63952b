import { createConnection, Socket } from 'node:net';

/**
 * Connects a test proxy's accepted `client` to `host:port` and ties the two sockets together:
 * each stands in `open` until it closes, and an error or a close on either side destroys the
 * other. The caller pipes what it forwards, as it forwards it.
 */
export function connectUpstream(client: Socket, host: string, port: number, open: Set<Socket>): Socket {
  const upstream = createConnection({ host, port });
  for (const [a, b] of [
    [client, upstream],
    [upstream, client],
  ] as const) {
    open.add(a);
    a.on('error', () => b.destroy());
    a.on('close', () => {
      open.delete(a);
      b.destroy();
    });
  }
  return upstream;
}

/** The URL through a proxy listening on 127.0.0.1:`port`: `url` with its host and port replaced. */
export function proxiedUrl(url: string, port: number): string {
  const parsed = new URL(url);
  parsed.hostname = '127.0.0.1';
  parsed.port = String(port);
  return parsed.toString();
}

/** Host and port of the server `url` names (AMQP's 5672 when it names none), for a proxy to forward to. */
export function serverOf(url: string): { host: string; port: number } {
  const parsed = new URL(url);
  return { host: parsed.hostname, port: Number(parsed.port || 5672) };
}
