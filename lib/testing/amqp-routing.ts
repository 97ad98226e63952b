/** The exchange types loopback delivery routes like RabbitMQ does. */
export type LoopbackExchangeType = 'topic' | 'direct' | 'fanout';

/**
 * Whether a message published with `routingKey` reaches a queue bound with `bindingKey` on an
 * exchange of `type`: topic bindings match word by word (words split on `.`; `*` is exactly one
 * word, `#` zero or more), direct bindings match the key exactly, fanout bindings match anything.
 */
export function bindingMatches(type: LoopbackExchangeType, bindingKey: string, routingKey: string): boolean {
  switch (type) {
    case 'fanout':
      return true;
    case 'direct':
      return bindingKey === routingKey;
    case 'topic':
      return topicMatches(bindingKey.split('.'), routingKey.split('.'));
  }
}

function topicMatches(pattern: string[], words: string[]): boolean {
  if (pattern.length === 0) return words.length === 0;
  const [head, ...rest] = pattern;
  if (head === '#') {
    // `#` takes none, one, or more of the remaining words.
    for (let taken = 0; taken <= words.length; taken++) if (topicMatches(rest, words.slice(taken))) return true;
    return false;
  }
  if (words.length === 0) return false;
  return (head === '*' || head === words[0]) && topicMatches(rest, words.slice(1));
}
