import { ClaimedMessage } from '../dialects/outbox-dialect';
import { OutboxTransport } from '../message/outbox-transport';
import { failedSend, SEND_THEN, SendResult, sendsThen, SendsThen } from '../message/send-then';
import { endSpan, spansMayRecord, startSpanFrom, withTraceContext } from '../observability/outbox-tracing';
import { sendSpanAttributes, sendSpanName } from './send-span';

/**
 * Sends a lane's batch, all of it in flight at once, each send awaiting its transport's
 * acknowledgement; resolves, never rejects, with each send's outcome in the batch's order. With
 * `sendMs`, each send's duration is written into it at the message's index.
 */
export function sendBatch(transport: OutboxTransport, lane: string, claimed: ClaimedMessage[], sendMs?: number[]): Promise<PromiseSettledResult<void>[]> {
  // Asked once per batch: without an SDK, nothing is built per message for a span.
  const traced = spansMayRecord();
  if (!traced && sendsThen(transport)) return sendAllThen(transport, claimed, sendMs);
  const send = (message: ClaimedMessage) => (traced ? sendTraced(transport, lane, message) : sendUntraced(transport, message));
  return Promise.allSettled(claimed.map((message, index) => (sendMs ? timed(() => send(message), sendMs, index) : send(message))));
}

/**
 * `sendBatch` through the transport's callback send: one promise for the batch instead of two per
 * message (its send's and the one `Promise.allSettled` chains to it).
 */
function sendAllThen(transport: SendsThen, claimed: ClaimedMessage[], sendMs?: number[]): Promise<SendResult[]> {
  if (claimed.length === 0) return Promise.resolve([]);
  return new Promise((resolve) => {
    const results = new Array<SendResult>(claimed.length);
    let waiting = claimed.length;
    claimed.forEach((message, index) => {
      const started = sendMs ? performance.now() : 0;
      const settled = (result: SendResult) => {
        // Once per message, even from a transport that answered and then threw.
        if (results[index] !== undefined) return;
        if (sendMs) sendMs[index] = performance.now() - started;
        results[index] = result;
        if (--waiting === 0) resolve(results);
      };
      try {
        transport[SEND_THEN](message, settled);
      } catch (error) {
        settled(failedSend(error));
      }
    });
  });
}

/**
 * One send, in a producer span continuing the trace the message was published in, whose context
 * the message carries on (where an SDK records spans; otherwise a plain send).
 */
async function sendTraced(transport: OutboxTransport, lane: string, message: ClaimedMessage): Promise<void> {
  const operation = startSpanFrom(message.headers, sendSpanName(message, lane), 'producer', sendSpanAttributes(transport, message, lane));
  if (!operation) return transport.send(message);
  try {
    await transport.send({ ...message, headers: withTraceContext(message.headers, operation) });
    endSpan(operation);
  } catch (error) {
    endSpan(operation, error);
    throw error;
  }
}

/** The transport's send, with a synchronous throw (a custom transport's) turned into this send's failure. */
function sendUntraced(transport: OutboxTransport, message: ClaimedMessage): Promise<void> {
  try {
    return transport.send(message);
  } catch (error) {
    return Promise.reject(error);
  }
}

/** Runs `send`, writing how long it took (settled either way) into `durations[index]`. */
async function timed(send: () => Promise<void>, durations: number[], index: number): Promise<void> {
  const started = performance.now();
  try {
    await send();
  } finally {
    durations[index] = performance.now() - started;
  }
}
