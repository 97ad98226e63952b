import type { MessageErrorHandler } from '@golevelup/nestjs-rabbitmq';
import type { LoggerService } from '@nestjs/common';
import type { ConsumeMessage } from 'amqplib';
import { describeError } from '../retry/error-classifier';
import { printable } from '../message/printable';

/**
 * Whether amqplib refused an operation because its channel (or the channel's connection) is
 * closed or closing. A delivery whose channel is gone is already back with the broker, which
 * delivers it again: nothing is left to settle.
 */
export function isClosedChannelError(error: unknown): boolean {
  return error instanceof Error && error.name === 'IllegalOperationError';
}

/**
 * The `errorHandler` the inbox gives every `@InboxHandler()` subscription. golevelup calls it when
 * acknowledging or rejecting a delivery throws, or when something before the inbox in the handler
 * chain throws (a guard, an interceptor), and does not catch what it throws: a rejection there is
 * unhandled and ends the process. This one never throws. A closed channel (a broker restart, a
 * dropped connection) is logged as a warning and left to the broker's redelivery; anything else
 * goes to `fallback`, the handler golevelup would have used, and whatever that throws is logged.
 */
export function guardedErrorHandler(fallback: MessageErrorHandler, where: string, logger: LoggerService): MessageErrorHandler {
  const closed = (message: ConsumeMessage, error: unknown) => {
    logger.warn(
      `${where}: the channel closed before message ${printable(message?.properties?.messageId)} was settled (${describeError(error, 200)}); the broker delivers it again`,
    );
  };
  return async (channel, message, error) => {
    try {
      if (isClosedChannelError(error)) return closed(message, error);
      try {
        await fallback(channel, message, error);
      } catch (fallbackError) {
        if (isClosedChannelError(fallbackError)) return closed(message, fallbackError);
        logger.error(
          `${where}: the error handler failed on message ${printable(message?.properties?.messageId)} (${describeError(fallbackError, 300)}) after ${describeError(error, 300)}; the delivery stays unsettled until its channel closes`,
        );
      }
    } catch {
      // Logging failed: nothing is left that could be reported, and nothing may escape.
    }
  };
}
