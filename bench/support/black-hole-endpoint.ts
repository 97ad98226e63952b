import { createServer, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';

/** Room for every connection of a hung lane arriving at once (Node's default is 511). */
const LISTEN_BACKLOG = 4_096;

/**
 * A local HTTP endpoint that hangs on request: while hanging it accepts every connection, reads
 * each request and leaves it unanswered, as a partner that stopped responding. `answer()` answers
 * the held requests (and later ones) 200, so that the lane which sent them finishes its batches
 * before any attempt times out: no attempt fails, and the endpoint's circuit never opens, which
 * would stop the lane from claiming and hanging again.
 */
export class BlackHoleEndpoint {
  private readonly held = new Set<ServerResponse>();
  private hanging = false;
  /** Held requests whose connection closed unanswered: the sender gave up (timed out) while held. */
  private givenUp = 0;

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {
    server.on('request', (request, response: ServerResponse) => {
      request.resume();
      request.on('end', () => {
        if (!this.hanging) return respond(response);
        this.held.add(response);
        response.on('close', () => {
          if (this.held.delete(response)) this.givenUp += 1;
        });
      });
    });
  }

  static async start(): Promise<BlackHoleEndpoint> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen({ port: 0, host: '127.0.0.1', backlog: LISTEN_BACKLOG }, resolve));
    const { port } = server.address() as AddressInfo;
    return new BlackHoleEndpoint(server, `http://127.0.0.1:${port}/hooks`);
  }

  /** Requests received and held unanswered now. */
  get holding(): number {
    return this.held.size;
  }

  /** Held requests that their sender abandoned since start. */
  get abandoned(): number {
    return this.givenUp;
  }

  /** From now on, holds every request unanswered. */
  hang(): void {
    this.hanging = true;
  }

  /** Answers every held request 200, and answers later ones at once. */
  answer(): void {
    this.hanging = false;
    const held = [...this.held];
    this.held.clear();
    for (const response of held) respond(response);
  }

  async close(): Promise<void> {
    this.held.clear();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

function respond(response: ServerResponse): void {
  response.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' });
  response.end('ok');
}
