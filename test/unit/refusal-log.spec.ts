import { Logger } from '@nestjs/common';
import { RefusalLog } from '../../lib/webhooks/refusal-log';

describe('RefusalLog', () => {
  function logWith(clock: { now: number }) {
    const lines: string[] = [];
    const logger = { warn: (line: string) => lines.push(line) } as unknown as Logger;
    return { log: new RefusalLog(logger, () => clock.now), lines };
  }

  it('logs ten refusals a minute one by one, then counts the rest and says how many the next minute', () => {
    const clock = { now: 0 };
    const { log, lines } = logWith(clock);
    for (let i = 0; i < 1_000; i++) log.refused('payments', 401, `bad signature ${i}`);
    expect(lines).toHaveLength(10);
    expect(lines[0]).toBe('payments refused a request with 401, nothing stored: bad signature 0');
    expect(lines[9]).toContain('further ones are counted, not logged');

    clock.now = 59_999;
    log.refused('payments', 401, 'still the same minute');
    expect(lines).toHaveLength(10);

    clock.now = 60_000;
    log.refused('payments', 413, 'a new minute');
    expect(lines.slice(10)).toEqual([
      '991 more webhook request(s) were refused in the last minute, not logged one by one',
      'payments refused a request with 413, nothing stored: a new minute',
    ]);
  });

  it('says nothing of a quiet minute', () => {
    const clock = { now: 0 };
    const { log, lines } = logWith(clock);
    log.refused('payments', 400, 'one');
    clock.now = 120_000;
    log.refused('payments', 400, 'two');
    expect(lines).toEqual(['payments refused a request with 400, nothing stored: one', 'payments refused a request with 400, nothing stored: two']);
  });
});
