import { printable } from '../../lib/message/printable';
import { storableText, unstorableReason } from '../../lib/inbox/storable-text';

describe('printable', () => {
  it('keeps ordinary text, Unicode included', () => {
    expect(printable('order.paid é € 😀')).toBe('order.paid é € 😀');
  });

  it('escapes what could forge or hide a log line', () => {
    expect(printable('a\nERROR forged\r\u0000\u001b[31m')).toBe('a\\u000aERROR forged\\u000d\\u0000\\u001b[31m');
    expect(printable('x\u2028y\u202ez\u0085')).toBe('x\\u2028y\\u202ez\\u0085');
    expect(printable('lone \ud800 and \udc00')).toBe('lone \\ud800 and \\udc00');
  });

  it('escapes backslashes, so that text cannot pass for an escape', () => {
    expect(printable('\\u000a')).toBe('\\\\u000a');
  });

  it('cuts long text and says how much', () => {
    expect(printable('x'.repeat(310), 300)).toBe(`${'x'.repeat(300)}…(10 more characters)`);
  });

  it('prints absent values as such', () => {
    expect(printable(undefined)).toBe('undefined');
  });
});

describe('storable text', () => {
  it('names NUL and lone surrogates as what an identity cannot hold', () => {
    expect(unstorableReason('m-1\u0000')).toMatch(/NUL/);
    expect(unstorableReason('m-\udfff')).toMatch(/lone surrogate/);
    expect(unstorableReason('m-😀')).toBeUndefined();
  });

  it('replaces them where the text is not an identity', () => {
    expect(storableText('a\u0000b\ud800')).toBe('a\uFFFDb\uFFFD');
    expect(storableText('plain')).toBe('plain');
  });
});
