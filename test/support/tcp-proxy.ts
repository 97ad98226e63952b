import { createServer, Server, Socket } from 'node:net';
import { connectUpstream, proxiedUrl, serverOf } from './proxied-connection';

/**
 * A TCP proxy a test owns, to simulate an outage of a shared service without disturbing other
 * test files: `cut()` resets every open connection and refuses new ones until `restore()`;
 * `blackHole()` keeps connections open but forwards nothing, as a peer that stopped answering;
 * `retarget()` moves the address to another server, as a failover manager moves a virtual IP.
 */
export class TcpProxy {
  private readonly sockets = new Set<Socket>();
  private forwarding = true;
  private swallowing = false;

  private constructor(
    private readonly server: Server,
    readonly port: number,
    private target: { host: string; port: number },
  ) {}

  /** Listens on `listenPort` (default: any free port) of 127.0.0.1 and forwards to the target. */
  static async start(targetHost: string, targetPort: number, listenPort = 0): Promise<TcpProxy> {
    let proxy!: TcpProxy;
    const server = createServer((client) => proxy.accept(client, proxy.target.host, proxy.target.port));
    await new Promise<void>((resolve) => server.listen(listenPort, '127.0.0.1', resolve));
    proxy = new TcpProxy(server, (server.address() as { port: number }).port, { host: targetHost, port: targetPort });
    return proxy;
  }

  /** A proxy to the server `url` names (the broker's `AMQP_URL`, say); `rewrite(url)` is the way through it. */
  static inFrontOf(url: string): Promise<TcpProxy> {
    const { host, port } = serverOf(url);
    return TcpProxy.start(host, port);
  }

  /** Sockets open on either side (two per forwarded connection, one per swallowed one): a closed connection leaves. */
  get openSockets(): number {
    return this.sockets.size;
  }

  /**
   * From now on forwards new connections to `host:port`, and resets those open to the old
   * target: clients reconnect through the same address and reach the new server.
   */
  retarget(host: string, port: number): void {
    this.target = { host, port };
    for (const socket of this.sockets) reset(socket);
    this.sockets.clear();
  }

  /** The proxied URL: `url` with its host and port replaced by the proxy's. */
  rewrite(url: string): string {
    return proxiedUrl(url, this.port);
  }

  cut(): void {
    this.forwarding = false;
    for (const socket of this.sockets) reset(socket);
    this.sockets.clear();
  }

  /**
   * From now on nothing is forwarded either way and new connections are accepted but never
   * answered: requests hang until their own timeouts. What peers send is read and dropped, so a
   * peer that closes its connection is seen to go (`openSockets`). `restore()` resets what it swallowed.
   */
  blackHole(): void {
    this.swallowing = true;
    for (const socket of this.sockets) {
      socket.unpipe();
      // Read and dropped rather than paused: a peer that closes its connection is seen to go.
      socket.resume();
    }
  }

  restore(): void {
    if (this.swallowing) {
      // Swallowed connections cannot be resumed mid-stream: their peers reconnect.
      for (const socket of this.sockets) reset(socket);
      this.sockets.clear();
    }
    this.swallowing = false;
    this.forwarding = true;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket, host: string, port: number): void {
    if (!this.forwarding) {
      client.on('error', () => undefined);
      reset(client);
      return;
    }
    if (this.swallowing) {
      this.sockets.add(client);
      client.resume();
      client.on('error', () => undefined);
      client.on('close', () => this.sockets.delete(client));
      return;
    }
    const upstream = connectUpstream(client, host, port, this.sockets);
    client.pipe(upstream);
    upstream.pipe(client);
  }
}

/**
 * Resets `socket`, or destroys it once its write side is shut down: Node cannot reset it then
 * (the reset fails with EINVAL) and would leave its handle open, and jest waiting on it.
 */
function reset(socket: Socket): void {
  if (socket.writableEnded) socket.destroy();
  else socket.resetAndDestroy();
}
