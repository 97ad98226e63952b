import type { ConsumeMessage } from 'amqplib';

/**
 * What an inbox handler's deserializer yields for a body that is not JSON (or is empty), instead
 * of throwing: golevelup would otherwise requeue it forever before any handler ran.
 */
export class MalformedBody {
  constructor(readonly reason: string) {}
}

/** Wraps a deserializer so that it never throws. */
export function safeDeserializer(deserialize: (content: Buffer, message: ConsumeMessage) => unknown = (content) => JSON.parse(content.toString('utf8'))) {
  return (content: Buffer, message: ConsumeMessage): unknown => {
    if (content.length === 0) return new MalformedBody('the body is empty');
    try {
      return deserialize(content, message);
    } catch (error) {
      return new MalformedBody(`the body is not valid JSON (${(error as Error).message})`);
    }
  };
}
