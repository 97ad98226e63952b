/**
 * An AMQP delivery as an `@InboxHandler()`'s `bizKey` and `orderingKey` see it: the shape of
 * amqplib's `ConsumeMessage`, declared here so that the library's public types need neither
 * amqplib's types nor golevelup's in an application that does not use RabbitMQ. amqplib's
 * `ConsumeMessage` is assignable to it, and it to `ConsumeMessage`.
 */
export interface AmqpMessage {
  /** The body, as received. */
  content: Buffer;
  /** Where the broker took the delivery from. */
  fields: {
    /** The channel's number for this delivery. */
    deliveryTag: number;
    /** Whether the broker delivered it before. */
    redelivered: boolean;
    /** The exchange it was published to. */
    exchange: string;
    /** The routing key it was published with. */
    routingKey: string;
    /** The consumer it was delivered to. */
    consumerTag: string;
  };
  /** The AMQP basic properties the producer set (`undefined` where it set none). */
  properties: {
    /** `content-type`. */
    contentType: any;
    /** `content-encoding`. */
    contentEncoding: any;
    /** The message's headers table. */
    headers: Record<string, any> | undefined;
    /** 1 transient, 2 persistent. */
    deliveryMode: any;
    /** `priority`. */
    priority: any;
    /** `correlation-id`. */
    correlationId: any;
    /** `reply-to`. */
    replyTo: any;
    /** Per-message TTL, in milliseconds as a string. */
    expiration: any;
    /** `message-id`: the inbox deduplicates on it. */
    messageId: any;
    /** `timestamp`, in seconds. */
    timestamp: any;
    /** `type`: the outbox sends the message's type in it. */
    type: any;
    /** `user-id`. */
    userId: any;
    /** `app-id`. */
    appId: any;
    /** `cluster-id`. */
    clusterId: any;
  };
}
