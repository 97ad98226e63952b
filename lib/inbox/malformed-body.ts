import type { ConsumeMessage } from 'amqplib';
import { isUtf8 } from 'node:buffer';

/**
 * What an inbox handler's deserializer yields for a body that is not JSON (or is empty), instead
 * of throwing: golevelup would otherwise requeue it forever before any handler ran.
 */
export class MalformedBody {
  constructor(readonly reason: string) {}
}

/**
 * golevelup's own deserializer, made strict about the text: `toString('utf8')` turns bytes that are
 * not UTF-8 into U+FFFD, so JSON with a broken string inside would parse into text the sender never
 * sent. JSON is UTF-8 (RFC 8259), so such a body is as malformed as one that does not parse.
 */
function parseJson(content: Buffer): unknown {
  if (!isUtf8(content)) return new MalformedBody('the body is not valid UTF-8, which JSON must be (RFC 8259)');
  return JSON.parse(content.toString('utf8'));
}

/** Wraps a deserializer so that it never throws. */
export function safeDeserializer(deserialize: (content: Buffer, message: ConsumeMessage) => unknown = parseJson) {
  return (content: Buffer, message: ConsumeMessage): unknown => {
    if (content.length === 0) return new MalformedBody('the body is empty');
    try {
      return deserialize(content, message);
    } catch (error) {
      return new MalformedBody(`the body is not valid JSON (${(error as Error).message})`);
    }
  };
}
