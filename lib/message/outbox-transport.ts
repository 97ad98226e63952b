/** A claimed message, as a transport sends it. */
export interface OutgoingMessage {
  /** UUID to send as the broker's message id; consumers dedupe on it. */
  messageId: string;
  /** The message type (`order.paid`); the RabbitMQ transport sends it as the AMQP `type` property. */
  type: string;
  /** The name of the configured transport the message was published for (its lane). */
  transport: string;
  /** RabbitMQ's address: the exchange ('' for the default exchange) and routing key; '' where unused. */
  exchange: string;
  /** RabbitMQ's routing key; '' where unused. */
  routingKey: string;
  /** Other transports' address: an HTTP endpoint's name, a `ClientProxy` pattern; '' when none was given. */
  destination: string;
  /** JSON text, sent as it was stored. */
  payload: string;
  /** The stored headers, parsed from their JSON; the delivery headers are added by the transport. */
  headers: Record<string, unknown>;
  /** Failed attempts so far: this send is attempt `attempts + 1`. */
  attempts: number;
  /** When the message was published (the database's clock at insert). */
  createdAt: Date;
  /** The `bizKey` it was published with; null without one. Set on every message the dispatcher sends. */
  bizKey?: string | null;
  /** The `orderingKey` it was published with; null without one. Set on every message the dispatcher sends. */
  orderingKey?: string | null;
}

/** The address fields of a message being published, as a transport checks them. */
export interface MessageAddress {
  /** The message type. */
  type: string;
  /** The AMQP exchange, as given to `publish()`. */
  exchange?: string;
  /** The AMQP routing key, as given to `publish()`. */
  routingKey?: string;
  /** The address of a non-RabbitMQ transport, as given to `publish()`. */
  destination?: string;
}

/** What is wrong with a message's address for a transport: the field at fault, and why. */
export interface AddressProblem {
  /** The field at fault; `publish()` reports it as `OutboxMessageInvalidError.field`. */
  field: 'exchange' | 'routingKey' | 'destination';
  /** Why the transport cannot send to it, for the error message. */
  message: string;
}

/** The server a send goes to, as the OpenTelemetry conventions' `server.address` and `server.port` name it. */
export interface ServerAddress {
  /** A host name as configured (no reverse DNS lookup), or an IP address. */
  address: string;
  /** The port, where known. */
  port?: number;
}

/**
 * Sends one message. Resolves only once the receiver has taken responsibility for it (a publisher
 * confirm, a 2xx answer); rejects otherwise. Implementations must bound every send with a timeout.
 *
 * What a rejection costs the message: `NonRetryableError` sends it straight to MANUAL_REQUIRED;
 * `TransportUnavailableError` (disconnected, blocked, or a failure another message caused) gives
 * it back without counting an attempt; `RetryLaterError` counts one and waits at least as long as
 * it says; any other error counts an attempt and retries with backoff.
 */
export interface OutboxTransport {
  /** Sends `message`; resolves once the receiver has taken responsibility for it, rejects otherwise. */
  send(message: OutgoingMessage): Promise<void>;
  /**
   * The messaging system, as the OpenTelemetry messaging conventions name it in
   * `messaging.system` (`rabbitmq`, `nats`, `kafka`, …), set on each send's span. Absent: `outbox`.
   */
  readonly messagingSystem?: string;
  /** The server `message` goes to, where known without a lookup: set on the send's span. */
  serverAddress?(message: OutgoingMessage): ServerAddress | undefined;
  /**
   * Whether a send could succeed now. While false, the transport's lane claims nothing: its
   * messages stay PENDING/FAILED (and cancellable) and spend no attempts. Absent: always available.
   */
  isAvailable?(): boolean;
  /** Calls `listener` whenever the transport becomes available again; returns an unsubscribe function. */
  onAvailable?(listener: () => void): () => void;
  /**
   * What is wrong with a message's address for this transport (a RabbitMQ message without a
   * routing key, an HTTP endpoint that is not configured), checked by `publish()` so that the
   * mistake fails the caller's transaction instead of becoming a message nobody can send.
   * Only where the message's transport is configured in the publishing process.
   */
  addressProblem?(address: MessageAddress): AddressProblem | undefined;
}
