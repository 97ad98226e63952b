/** Deliveries whose recording failed that are remembered at once; the oldest is forgotten first. */
const MAX_TRACKED = 10_000;

interface Streak {
  /** Recording failures in a row with the database unavailable. */
  failures: number;
  /** `recordedCount` when the streak began: a higher count since then means others were recorded. */
  recordedAtStart: number;
}

/**
 * Remembers, per delivery (consumer and message), how many times in a row recording it failed
 * with an error that says the database is unavailable, and whether other deliveries were
 * recorded meanwhile. A whole-database outage fails every delivery alike and is waited out; a
 * delivery that keeps failing while others are recorded is the problem itself (e.g. a statement
 * the server answers by dropping the connection), and must not be handed back forever.
 */
export class RecordingFailures {
  private readonly streaks = new Map<string, Streak>();
  private recordedCount = 0;

  constructor(
    /** Failures in a row after which a delivery is given up when others were recorded meanwhile. */
    private readonly limit: number,
    /** Failures in a row after which a delivery is given up when nothing else was recorded either. */
    private readonly limitAlone: number,
  ) {}

  /** Whether any delivery is being tracked (the success path skips its work when not). */
  get tracking(): boolean {
    return this.streaks.size > 0;
  }

  /** Notes that a delivery was recorded: it ends the delivery's streak and counts as the database serving others. */
  recorded(key: string | undefined): void {
    this.recordedCount++;
    if (key !== undefined) this.streaks.delete(key);
  }

  /**
   * Counts a failure of `key`. `othersRecorded`: other deliveries were recorded since its streak
   * began, so the database is serving; `giveUp`: stop handing the delivery back.
   */
  failed(key: string): { failures: number; othersRecorded: boolean; giveUp: boolean } {
    let streak = this.streaks.get(key);
    if (!streak) {
      if (this.streaks.size >= MAX_TRACKED) this.streaks.delete(this.streaks.keys().next().value as string);
      streak = { failures: 0, recordedAtStart: this.recordedCount };
      this.streaks.set(key, streak);
    }
    streak.failures++;
    const othersRecorded = this.recordedCount > streak.recordedAtStart;
    return { failures: streak.failures, othersRecorded, giveUp: streak.failures >= (othersRecorded ? this.limit : this.limitAlone) };
  }

  forget(key: string): void {
    this.streaks.delete(key);
  }
}
