import type { LaneSpec } from '../options/transport-lanes';
import type { OutboxTransport } from '../message/outbox-transport';

/** A configured transport with its lane's settings. */
export interface TransportLane {
  /** The transport's name. */
  name: string;
  /** The transport instance Nest created. */
  transport: OutboxTransport;
  /** The lane's configuration, as given in the module options. */
  spec: LaneSpec;
}

/** The transports this process configures, by name, and the one that sends messages nothing else placed. */
export class OutboxTransports {
  private readonly byName: ReadonlyMap<string, TransportLane>;

  constructor(
    lanes: TransportLane[],
    /** The transport of messages published without one that `route()` did not place. */
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

  /** The names of the configured transports. */
  names(): string[] {
    return [...this.byName.keys()];
  }
}
