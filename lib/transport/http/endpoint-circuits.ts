import { EndpointCircuit } from './endpoint-circuit';

/**
 * The circuits of all endpoints, and the transport's availability drawn from them: unavailable
 * while every endpoint waits (the dispatcher then claims nothing), available again, with its
 * listeners called, when a pause ends or a probe is answered.
 */
export class EndpointCircuits {
  private readonly circuits = new Map<string, EndpointCircuit>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly listeners = new Set<() => void>();

  constructor(names: Iterable<string>) {
    for (const name of names) this.circuits.set(name, new EndpointCircuit());
  }

  get(name: string): EndpointCircuit | undefined {
    return this.circuits.get(name);
  }

  /** False while every endpoint waits for its pause to end or its probe to be answered. */
  get available(): boolean {
    for (const circuit of this.circuits.values()) if (!circuit.waiting) return true;
    return false;
  }

  onAvailable(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** After `name`'s circuit took a failure: wakes the listeners when its pause ends. */
  paused(name: string): void {
    const circuit = this.circuits.get(name)!;
    if (!circuit.waiting) return;
    clearTimeout(this.timers.get(name));
    const timer = setTimeout(() => this.wake(name), Math.max(0, circuit.pauseEndsAt - Date.now()));
    timer.unref();
    this.timers.set(name, timer);
  }

  /** After `name` answered: wakes the listeners if its circuit was open. */
  closed(name: string, wasOpen: boolean): void {
    if (wasOpen) this.wake(name);
  }

  close(): void {
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    this.listeners.clear();
  }

  private wake(name: string): void {
    this.timers.delete(name);
    for (const listener of [...this.listeners]) listener();
  }
}
