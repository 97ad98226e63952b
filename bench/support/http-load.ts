import { join } from 'node:path';
import { Worker } from 'node:worker_threads';

/** One closed-loop load run against one URL. */
export interface HttpLoadRequest {
  url: string;
  concurrency: number;
  durationMs: number;
  /** Webhook ids are `${idPrefix}-${n}`: give each run a prefix of its own, so that no request is a duplicate. */
  idPrefix: string;
}

export interface HttpLoadResult {
  /** 200 answers per second. */
  requestsPerSecond: number;
  completed: number;
  /** Requests answered otherwise, or not at all. */
  failures: number;
  firstFailure?: string;
}

/**
 * An HTTP load generator on a thread of its own (keep-alive `node:http`, POSTs of 1 KB JSON
 * webhooks), so that the server's event loop does only server work, as it would with senders on
 * other machines. The thread shares the machine's cores with the server and the database.
 */
export class HttpLoad {
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(private readonly worker: Worker) {}

  static start(): HttpLoad {
    // The thread loads TypeScript as the bench does (ts-node, transpile only).
    const worker = new Worker(
      `require('ts-node').register({ transpileOnly: true, project: ${JSON.stringify(join(__dirname, '..', '..', 'tsconfig.json'))} });
       require(${JSON.stringify(join(__dirname, 'http-load.worker.ts'))});`,
      { eval: true },
    );
    worker.unref();
    return new HttpLoad(worker);
  }

  /** Runs one load and returns what it achieved; runs are taken one at a time. */
  run(job: HttpLoadRequest): Promise<HttpLoadResult> {
    const next = this.queue.then(
      () =>
        new Promise<HttpLoadResult>((resolve, reject) => {
          const onError = (error: Error) => reject(error);
          this.worker.once('error', onError);
          this.worker.once('message', (result: HttpLoadResult) => {
            this.worker.off('error', onError);
            resolve(result);
          });
          this.worker.postMessage(job);
        }),
    );
    this.queue = next.catch(() => undefined);
    return next;
  }

  async close(): Promise<void> {
    await this.worker.terminate();
  }
}
