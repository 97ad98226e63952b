/**
 * An AMQP delivery as an `@InboxHandler()`'s `bizKey` and `orderingKey` see it: the shape of
 * amqplib's `ConsumeMessage`, declared here so that the library's public types need neither
 * amqplib's types nor golevelup's in an application that does not use RabbitMQ. amqplib's
 * `ConsumeMessage` is assignable to it.
 */
export interface AmqpMessage {
  /** The body, as received. */
  content: Buffer;
  /** Where the broker took the delivery from. */
  fields: {
    deliveryTag: number;
    redelivered: boolean;
    exchange: string;
    routingKey: string;
    consumerTag: string;
  };
  /** The AMQP basic properties the producer set (`messageId`, `type`, `headers`…). */
  properties: {
    contentType: any;
    contentEncoding: any;
    headers: Record<string, any> | undefined;
    deliveryMode: any;
    priority: any;
    correlationId: any;
    replyTo: any;
    expiration: any;
    messageId: any;
    timestamp: any;
    type: any;
    userId: any;
    appId: any;
    clusterId: any;
  };
}
