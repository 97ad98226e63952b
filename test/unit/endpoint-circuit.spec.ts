import { EndpointCircuit, FIRST_PAUSE_MS, MAX_PAUSE_MS, OPEN_AFTER_FAILURES } from '../../lib/transport/http/endpoint-circuit';

describe('EndpointCircuit', () => {
  let now: number;
  let circuit: EndpointCircuit;
  beforeEach(() => {
    now = 1_000_000;
    circuit = new EndpointCircuit(() => now);
  });
  const failTimes = (n: number) => {
    for (let i = 0; i < n; i++) circuit.down();
  };

  it('lets sends through until enough failures in a row say the endpoint is down', () => {
    failTimes(OPEN_AFTER_FAILURES - 1);
    expect(circuit.admit()).toBe('send');
    circuit.answered();
    failTimes(OPEN_AFTER_FAILURES - 1);
    expect(circuit.waiting).toBe(false);
    circuit.down();
    expect(circuit.waiting).toBe(true);
    expect(circuit.admit()).toBe('wait');
  });

  it('sends one probe once the pause is over, and closes when it is answered', () => {
    failTimes(OPEN_AFTER_FAILURES);
    now += FIRST_PAUSE_MS - 1;
    expect(circuit.admit()).toBe('wait');
    now += 1;
    expect(circuit.admit()).toBe('probe');
    // The probe is in flight: the others keep waiting.
    expect(circuit.admit()).toBe('wait');
    expect(circuit.waiting).toBe(true);
    circuit.answered();
    expect(circuit.waiting).toBe(false);
    expect(circuit.admit()).toBe('send');
  });

  it('doubles the pause with every failed probe, up to its ceiling', () => {
    failTimes(OPEN_AFTER_FAILURES);
    const pauses: number[] = [];
    for (let i = 0; i < 10; i++) {
      const from = now;
      now = circuit.pauseEndsAt;
      pauses.push(now - from);
      expect(circuit.admit()).toBe('probe');
      circuit.down();
    }
    expect(pauses.slice(0, 4)).toEqual([FIRST_PAUSE_MS, 2 * FIRST_PAUSE_MS, 4 * FIRST_PAUSE_MS, 8 * FIRST_PAUSE_MS]);
    expect(Math.max(...pauses)).toBe(MAX_PAUSE_MS);
  });

  it('pauses at least as long as the endpoint asked, and never longer than the ceiling', () => {
    failTimes(OPEN_AFTER_FAILURES - 1);
    circuit.down(30_000);
    expect(circuit.pauseEndsAt - now).toBe(30_000);
    now = circuit.pauseEndsAt;
    expect(circuit.admit()).toBe('probe');
    circuit.down(10 * 60_000);
    expect(circuit.pauseEndsAt - now).toBe(MAX_PAUSE_MS);
    now = circuit.pauseEndsAt;
    expect(circuit.admit()).toBe('probe');
    circuit.down(NaN);
    expect(circuit.pauseEndsAt - now).toBe(4 * FIRST_PAUSE_MS);
  });

  it('starts over after an answer: the next outage pauses the first pause again', () => {
    failTimes(OPEN_AFTER_FAILURES);
    now = circuit.pauseEndsAt;
    circuit.admit();
    circuit.down();
    now = circuit.pauseEndsAt;
    circuit.admit();
    circuit.answered();
    failTimes(OPEN_AFTER_FAILURES);
    expect(circuit.pauseEndsAt - now).toBe(FIRST_PAUSE_MS);
  });
});
