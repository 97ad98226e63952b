import { SendDeadlines } from '../../lib/transport/send-deadlines';

const TIMEOUT_MS = 1_000;

describe('SendDeadlines', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('expires a send that has not ended once its timeout has passed, and not before', () => {
    const deadlines = new SendDeadlines(TIMEOUT_MS);
    const expired = jest.fn();
    deadlines.start(expired);
    jest.advanceTimersByTime(TIMEOUT_MS - 1);
    expect(expired).not.toHaveBeenCalled();
    jest.advanceTimersByTime(1);
    expect(expired).toHaveBeenCalledTimes(1);
  });

  it('gives each send its own timeout from its own start', () => {
    const deadlines = new SendDeadlines(TIMEOUT_MS);
    const expired: string[] = [];
    deadlines.start(() => expired.push('first'));
    jest.advanceTimersByTime(400);
    deadlines.start(() => expired.push('second'));
    jest.advanceTimersByTime(600);
    expect(expired).toEqual(['first']);
    jest.advanceTimersByTime(399);
    expect(expired).toEqual(['first']);
    jest.advanceTimersByTime(1);
    expect(expired).toEqual(['first', 'second']);
  });

  it('never expires a send that ended, wherever it stood in the queue', () => {
    const deadlines = new SendDeadlines(TIMEOUT_MS);
    const expired: number[] = [];
    const sends = [0, 1, 2, 3].map((n) => {
      jest.advanceTimersByTime(10);
      return deadlines.start(() => expired.push(n));
    });
    // Ended out of order: one behind the front, then the front.
    deadlines.end(sends[2]);
    deadlines.end(sends[0]);
    jest.advanceTimersByTime(2 * TIMEOUT_MS);
    expect(expired).toEqual([1, 3]);
  });

  it('holds no timer once every send has ended', () => {
    const deadlines = new SendDeadlines(TIMEOUT_MS);
    const sends = [deadlines.start(() => undefined), deadlines.start(() => undefined)];
    expect(jest.getTimerCount()).toBe(1);
    for (const send of sends) deadlines.end(send);
    expect(jest.getTimerCount()).toBe(0);
    expect(deadlines.size).toBe(0);
  });

  it('keeps expiring the sends behind one whose callback throws', () => {
    const deadlines = new SendDeadlines(TIMEOUT_MS);
    const expired = jest.fn();
    deadlines.start(() => {
      throw new Error('a careless callback');
    });
    deadlines.start(expired);
    jest.advanceTimersByTime(TIMEOUT_MS);
    expect(expired).toHaveBeenCalledTimes(1);
  });

  it('stays short under a steady stream of sends that end in order', () => {
    const deadlines = new SendDeadlines(TIMEOUT_MS);
    const expired = jest.fn();
    let previous = deadlines.start(expired);
    for (let n = 0; n < 5_000; n++) {
      const next = deadlines.start(expired);
      deadlines.end(previous);
      previous = next;
    }
    expect(deadlines.size).toBe(1);
    jest.advanceTimersByTime(TIMEOUT_MS);
    expect(expired).toHaveBeenCalledTimes(1);
  });
});
