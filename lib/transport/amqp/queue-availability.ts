import type { AmqpConnection, ConsumerHandler, MessageHandlerOptions } from '@golevelup/nestjs-rabbitmq';
import type { Channel, ChannelModel } from 'amqplib';

/** The parts of golevelup's `AmqpConnection` it keeps private, which a re-subscription needs. */
interface GolevelupInternals {
  getConsumer(consumerTag: string): ConsumerHandler<unknown, unknown> | undefined;
  setupQueue(options: MessageHandlerOptions, channel: Channel): Promise<string>;
}

/** golevelup's record of the consumer `consumerTag` (its options, the channel it consumes on), if it made it. */
export function golevelupConsumer(connection: AmqpConnection, consumerTag: string): ConsumerHandler<unknown, unknown> | undefined {
  return (connection as unknown as GolevelupInternals).getConsumer(consumerTag);
}

/**
 * Whether a consumer could subscribe to its queue again: the queue exists (a passive declare), and
 * golevelup's own queue set-up for the handler (declare with its arguments, bind) succeeds. Both run
 * on a channel of their own, because the broker closes a channel on which a declare fails (404, or
 * 406 for other arguments), and golevelup's shared channel is not reopened before the next
 * reconnect. Resolves when the queue is ready, rejects with the broker's reason otherwise.
 */
export async function probeQueue(connection: AmqpConnection, options: MessageHandlerOptions): Promise<void> {
  // golevelup types it as amqplib's low-level Connection; it is the ChannelModel amqp-connection-manager opened.
  const probe = await (connection.connection as unknown as ChannelModel).createChannel();
  // The broker's refusal closes this channel: an expected answer, not an error to report.
  probe.on('error', () => undefined);
  try {
    if (options.queue) await probe.checkQueue(options.queue);
    await (connection as unknown as GolevelupInternals).setupQueue(options, probe);
  } finally {
    await probe.close().catch(() => undefined);
  }
}
