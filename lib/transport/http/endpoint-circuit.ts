/** Failures in a row, each saying the endpoint is down (no answer, 429, 502, 503, 504), that open the circuit. */
export const OPEN_AFTER_FAILURES = 5;
/** The first pause once open; it doubles with every probe that fails. */
export const FIRST_PAUSE_MS = 1_000;
/** The longest pause between probes, whatever a `Retry-After` asks. */
export const MAX_PAUSE_MS = 60_000;

/** What a send to the endpoint may do now. */
export type CircuitPass = 'send' | 'probe' | 'wait';

/**
 * Whether an endpoint is reachable, from the outcomes of the sends to it. After
 * `OPEN_AFTER_FAILURES` failures in a row that say the endpoint is down, the circuit opens: sends
 * wait (the transport gives their messages back without counting an attempt) for a pause, then
 * one send goes as a probe while the others keep waiting. A probe that is answered closes the
 * circuit; one that fails doubles the pause. So an outage of any length costs a message at most
 * the attempts that opened the circuit, as a broker outage costs none.
 */
export class EndpointCircuit {
  private failuresInARow = 0;
  private pauseMs = FIRST_PAUSE_MS;
  private openUntil = 0;
  private probing = false;

  constructor(private readonly now: () => number = Date.now) {}

  /** Whether sends wait now (open and not yet due for a probe, or a probe in flight). */
  get waiting(): boolean {
    return this.failuresInARow >= OPEN_AFTER_FAILURES && (this.probing || this.now() < this.openUntil);
  }

  /** When the current pause ends (epoch ms), for a wake-up. */
  get pauseEndsAt(): number {
    return this.openUntil;
  }

  /** Takes a pass for one send: `send` while closed, one `probe` once a pause is over, else `wait`. */
  admit(): CircuitPass {
    if (this.failuresInARow < OPEN_AFTER_FAILURES) return 'send';
    if (this.waiting) return 'wait';
    this.probing = true;
    return 'probe';
  }

  /** The endpoint answered (whatever the status, other than one that says it is down). */
  answered(): void {
    this.failuresInARow = 0;
    this.pauseMs = FIRST_PAUSE_MS;
    this.probing = false;
  }

  /** A send failed in a way that says the endpoint is down; `retryAfterMs` when it said how long. */
  down(retryAfterMs?: number): void {
    this.failuresInARow += 1;
    if (this.failuresInARow < OPEN_AFTER_FAILURES) return;
    const asked = retryAfterMs !== undefined && Number.isFinite(retryAfterMs) ? retryAfterMs : 0;
    // The first opening pauses FIRST_PAUSE_MS; every failed probe after it doubles the pause.
    if (this.probing) this.pauseMs = Math.min(this.pauseMs * 2, MAX_PAUSE_MS);
    this.openUntil = this.now() + Math.min(Math.max(this.pauseMs, asked), MAX_PAUSE_MS);
    this.probing = false;
  }
}
