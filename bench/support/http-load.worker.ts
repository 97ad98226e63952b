import { randomBytes } from 'node:crypto';
import { Agent, request } from 'node:http';
import { parentPort } from 'node:worker_threads';
import type { HttpLoadRequest, HttpLoadResult } from './http-load';
import { webhookBody } from './webhook-event';

/** A Standard Webhooks signature header of the real size; no route in the bench verifies it. */
const SIGNATURE = `v1,${randomBytes(32).toString('base64')}`;

/**
 * Closed loop: `concurrency` requests in flight on as many keep-alive connections, each sent as
 * soon as the one before it on its connection answered, until the time is up. Every request has a
 * webhook-id of its own. Counts 200s; anything else is a failure, reported, never counted.
 */
async function runLoad(job: HttpLoadRequest): Promise<HttpLoadResult> {
  const target = new URL(job.url);
  const agent = new Agent({ keepAlive: true, maxSockets: job.concurrency });
  let sent = 0;
  let completed = 0;
  let failures = 0;
  let firstFailure: string | undefined;
  const post = (): Promise<void> => {
    const n = ++sent;
    const id = `${job.idPrefix}-${n}`;
    const body = webhookBody(id, n);
    const headers = {
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
      'webhook-signature': SIGNATURE,
    };
    return new Promise((resolve) => {
      const fail = (reason: string) => {
        failures++;
        firstFailure ??= reason;
        resolve();
      };
      const req = request({ host: target.hostname, port: target.port, path: target.pathname, method: 'POST', agent, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          if (res.statusCode === 200) {
            completed++;
            resolve();
          } else fail(`${res.statusCode} ${Buffer.concat(chunks).toString('utf8').slice(0, 300)}`);
        });
        res.on('error', (error) => fail(String(error)));
      });
      req.on('error', (error) => fail(String(error)));
      req.end(body);
    });
  };
  const started = performance.now();
  const deadline = started + job.durationMs;
  try {
    await Promise.all(
      Array.from({ length: job.concurrency }, async () => {
        while (performance.now() < deadline) await post();
      }),
    );
  } finally {
    agent.destroy();
  }
  const seconds = (performance.now() - started) / 1000;
  return { requestsPerSecond: completed / seconds, completed, failures, firstFailure };
}

parentPort!.on('message', (job: HttpLoadRequest) => {
  runLoad(job).then(
    (result) => parentPort!.postMessage(result),
    (error) => parentPort!.postMessage({ requestsPerSecond: 0, completed: 0, failures: 1, firstFailure: String(error) } satisfies HttpLoadResult),
  );
});
