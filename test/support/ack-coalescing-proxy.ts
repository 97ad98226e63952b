import { createServer, Server, Socket } from 'node:net';
import { connectUpstream, proxiedUrl, serverOf } from './proxied-connection';

/** AMQP 0-9-1: a frame is type (1 byte), channel (2), payload size (4), payload, end byte 0xCE. */
const FRAME_HEADER = 7;
const FRAME_END = 0xce;
const METHOD_FRAME = 1;
const BASIC_CLASS = 60;
const BASIC_ACK = 80;

interface Coalescing {
  left: number;
  done: () => void;
}

/**
 * A TCP proxy in front of RabbitMQ that rewrites the broker's publisher confirms the way the
 * protocol allows a broker to send them: `coalesceNextAcks(n)` holds the next `n` `basic.ack`
 * frames and then forwards one, for the last tag, with `multiple` set. Every other frame (the
 * `basic.return`s among them, heartbeats) passes at once, so the client sees the returns of
 * all `n` publications before any of their confirms: a broker that batches confirms under load.
 */
export class AckCoalescingProxy {
  private readonly sockets = new Set<Socket>();
  private coalescing?: Coalescing;

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(targetHost: string, targetPort: number): Promise<AckCoalescingProxy> {
    let proxy!: AckCoalescingProxy;
    const server = createServer((client) => proxy.accept(client, targetHost, targetPort));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    proxy = new AckCoalescingProxy(server, (server.address() as { port: number }).port);
    return proxy;
  }

  /** A proxy to the server `url` names; `rewrite(url)` is the way through it. */
  static inFrontOf(url: string): Promise<AckCoalescingProxy> {
    const { host, port } = serverOf(url);
    return AckCoalescingProxy.start(host, port);
  }

  /** The proxied URL: `url` with its host and port replaced by the proxy's. */
  rewrite(url: string): string {
    return proxiedUrl(url, this.port);
  }

  /** Holds the next `count` confirms from the broker; resolves once the one that stands for all of them went to the client. */
  coalesceNextAcks(count: number): Promise<void> {
    return new Promise<void>((done) => (this.coalescing = { left: count, done }));
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket, host: string, port: number): void {
    const upstream = connectUpstream(client, host, port, this.sockets);
    client.pipe(upstream);
    let pending: Buffer = Buffer.alloc(0);
    upstream.on('data', (chunk: Buffer) => {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      let offset = 0;
      while (pending.length - offset >= FRAME_HEADER) {
        const length = FRAME_HEADER + pending.readUInt32BE(offset + 3) + 1;
        if (pending.length - offset < length) break;
        const frame = pending.subarray(offset, offset + length);
        offset += length;
        const forwarded = this.rewriteFrame(frame);
        if (forwarded) client.write(forwarded);
      }
      pending = pending.subarray(offset);
    });
  }

  /** The frame to forward in place of `frame`, or undefined to hold it back. */
  private rewriteFrame(frame: Buffer): Buffer | undefined {
    const coalescing = this.coalescing;
    if (!coalescing || !isBasicAck(frame)) return Buffer.from(frame);
    if (--coalescing.left > 0) return undefined;
    this.coalescing = undefined;
    const merged = Buffer.from(frame);
    // basic.ack's arguments: delivery-tag (8 bytes), then the bits, `multiple` the first of them.
    merged[FRAME_HEADER + 4 + 8] |= 1;
    setImmediate(coalescing.done);
    return merged;
  }
}

function isBasicAck(frame: Buffer): boolean {
  return (
    frame[0] === METHOD_FRAME &&
    frame.readUInt16BE(FRAME_HEADER) === BASIC_CLASS &&
    frame.readUInt16BE(FRAME_HEADER + 2) === BASIC_ACK &&
    frame[frame.length - 1] === FRAME_END
  );
}
