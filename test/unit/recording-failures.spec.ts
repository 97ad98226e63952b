import { RecordingFailures } from '../../lib/inbox/recording-failures';

describe('RecordingFailures', () => {
  it('waits out a database that fails every delivery alike, up to the longer limit', () => {
    const failures = new RecordingFailures(3, 6);
    for (let i = 1; i < 6; i++) {
      expect(failures.failed('a').giveUp).toBe(false);
      expect(failures.failed('b').giveUp).toBe(false);
    }
    expect(failures.failed('a')).toEqual({ failures: 6, othersRecorded: false, giveUp: true });
  });

  it('gives up sooner on a delivery that keeps failing while others are recorded', () => {
    const failures = new RecordingFailures(3, 6);
    failures.failed('poison');
    failures.recorded('good');
    failures.failed('poison');
    expect(failures.failed('poison')).toEqual({ failures: 3, othersRecorded: true, giveUp: true });
  });

  it('ends a streak when the delivery is recorded', () => {
    const failures = new RecordingFailures(3, 6);
    failures.failed('a');
    failures.failed('a');
    failures.recorded('a');
    expect(failures.tracking).toBe(false);
    expect(failures.failed('a')).toEqual({ failures: 1, othersRecorded: false, giveUp: false });
  });
});
