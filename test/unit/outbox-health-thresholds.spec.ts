import { OutboxHealthFigures, thresholdProblems } from '../../lib/health/health-problems';

const figures = (outbox: Partial<OutboxHealthFigures['outbox']>, inbox: Partial<OutboxHealthFigures['inbox']> = {}): OutboxHealthFigures => ({
  outbox: { lagMs: 0, due: 0, inFlight: 0, manualRequired: 0, ...outbox },
  inbox: { lagMs: 0, due: 0, inFlight: 0, manualRequired: 0, ...inbox },
});

describe('thresholdProblems', () => {
  it('finds nothing when no threshold is set, whatever the figures', () => {
    expect(thresholdProblems(figures({ lagMs: 1e9, manualRequired: 99 }, { lagMs: 1e9 }), {})).toEqual([]);
  });

  it('tolerates a figure equal to its threshold and reports one above it', () => {
    expect(thresholdProblems(figures({ lagMs: 1_000 }), { maxLagMs: 1_000 })).toEqual([]);
    expect(thresholdProblems(figures({ lagMs: 1_001 }), { maxLagMs: 1_000 })).toEqual(['outbox lag 1001 ms is over maxLagMs 1000']);
  });

  it('judges the inbox lag by its own threshold only', () => {
    expect(thresholdProblems(figures({}, { lagMs: 5_000 }), { maxLagMs: 1_000 })).toEqual([]);
    expect(thresholdProblems(figures({}, { lagMs: 5_000 }), { maxInboxLagMs: 1_000 })).toEqual(['inbox lag 5000 ms is over maxInboxLagMs 1000']);
  });

  it('counts MANUAL_REQUIRED rows of the outbox and the inbox together', () => {
    expect(thresholdProblems(figures({ manualRequired: 1 }, { manualRequired: 1 }), { maxManualRequired: 1 })).toEqual([
      '2 MANUAL_REQUIRED rows are over maxManualRequired 1',
    ]);
  });
});
