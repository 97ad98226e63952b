import type { Channel, ConsumeMessage } from 'amqplib';
import { guardedErrorHandler, isClosedChannelError } from '../../lib/inbox/guarded-error-handler';

/** amqplib's error for an operation on a closed channel. */
function closedChannel(): Error {
  const error = new Error('Channel closed');
  error.name = 'IllegalOperationError';
  return error;
}

const message = { properties: { messageId: 'm-1\n' }, fields: {} } as unknown as ConsumeMessage;
const channel = {} as Channel;

function recordingLogger() {
  const lines: { level: string; text: string }[] = [];
  return {
    lines,
    log: (text: string) => lines.push({ level: 'log', text }),
    warn: (text: string) => lines.push({ level: 'warn', text }),
    error: (text: string) => lines.push({ level: 'error', text }),
  };
}

describe('guardedErrorHandler', () => {
  it('recognises amqplib refusing an operation on a closed channel', () => {
    expect(isClosedChannelError(closedChannel())).toBe(true);
    expect(isClosedChannelError(new Error('Channel closed'))).toBe(false);
  });

  it('leaves a delivery on a closed channel to the broker, with a warning and without calling the fallback', async () => {
    const logger = recordingLogger();
    const fallback = jest.fn();
    await guardedErrorHandler(fallback, 'Consumer.handle', logger)(channel, message, closedChannel());
    expect(fallback).not.toHaveBeenCalled();
    expect(logger.lines).toEqual([{ level: 'warn', text: expect.stringMatching(/channel closed before message m-1\\u000a was settled.*delivers it again/) }]);
  });

  it('calls the fallback for other errors, and never throws what it throws', async () => {
    const logger = recordingLogger();
    const nackOnClosedChannel = jest.fn(() => {
      throw closedChannel();
    });
    await expect(guardedErrorHandler(nackOnClosedChannel, 'Consumer.handle', logger)(channel, message, new Error('guard refused'))).resolves.toBeUndefined();
    expect(nackOnClosedChannel).toHaveBeenCalledWith(channel, message, expect.any(Error));
    expect(logger.lines.map((l) => l.level)).toEqual(['warn']);

    const broken = jest.fn(async () => {
      throw new Error('handler bug');
    });
    await expect(guardedErrorHandler(broken, 'Consumer.handle', logger)(channel, message, new Error('guard refused'))).resolves.toBeUndefined();
    expect(logger.lines[1]).toEqual({ level: 'error', text: expect.stringMatching(/error handler failed .*handler bug/) });
  });
});
