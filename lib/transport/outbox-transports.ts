import type { LaneSpec } from '../options/transport-lanes';
import type { OutboxTransport } from './outbox-transport';

/** A configured transport with its lane's settings. */
export interface TransportLane {
  name: string;
  transport: OutboxTransport;
  spec: LaneSpec;
}

/** The transports this process configures, by name, and the one that sends messages nothing else placed. */
export class OutboxTransports {
  private readonly byName: ReadonlyMap<string, TransportLane>;

  constructor(
    lanes: TransportLane[],
    readonly defaultName: string,
  ) {
    this.byName = new Map(lanes.map((lane) => [lane.name, lane]));
  }

  /** The transport named `name`, if this process configures it. */
  get(name: string): OutboxTransport | undefined {
    return this.byName.get(name)?.transport;
  }

  /** Every configured transport with its lane. */
  lanes(): TransportLane[] {
    return [...this.byName.values()];
  }

  names(): string[] {
    return [...this.byName.keys()];
  }
}
