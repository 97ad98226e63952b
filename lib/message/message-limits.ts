/*
 * What a message must fit to be stored by every supported database and sent by amqplib over
 * AMQP 0-9-1 exactly as given. Each limit is measured the way the wire or the column measures it.
 */

/**
 * Highest attempt budget, per message and module-wide: `max_attempts` is a 32-bit integer
 * column, and a budget beyond this is an outage nobody looks at rather than a retry policy.
 */
export const MAX_ATTEMPTS_LIMIT = 1_000;

/**
 * Bytes of UTF-8 in an AMQP short string (exchange, routing key, the `type` property, a header
 * name): its length travels in one octet, and amqplib throws on more.
 */
export const AMQP_SHORT_STRING_MAX_BYTES = 255;

/**
 * Bytes of a message's encoded header table, its 4-byte length included: amqplib encodes it into
 * one shared 65,536-byte buffer and sends a corrupt frame or throws when it does not fit.
 */
export const AMQP_HEADERS_MAX_BYTES = 65_536;

/**
 * Room kept in the AMQP header table for the delivery headers every transport adds
 * (`deliveryHeaders()`), beyond what `publish()` lets a message's own headers take: two
 * short-string keys with their values, with margin.
 */
export const DELIVERY_HEADERS_RESERVED_BYTES = 128;

/**
 * Nesting levels of a header table (the table itself is level 1). amqplib encodes and decodes
 * tables recursively on both sides of the broker; headers deeper than this are a payload in
 * disguise.
 */
export const HEADERS_MAX_DEPTH = 100;

/**
 * Characters of the short text columns (message_type, biz_key, ordering_key, exchange,
 * routing_key): varchar(255), counted in code points by PostgreSQL and by MariaDB/MySQL in
 * utf8mb4.
 */
export const TEXT_COLUMN_MAX_CHARACTERS = 255;

/** The longest consumer name the inbox table holds (its `consumer` column is VARCHAR(200) on every database). */
export const CONSUMER_NAME_MAX_LENGTH = 200;

/** Default of `maxPayloadBytes`: the same 1 MiB the inbox accepts by default (`inboxMaxBodyBytes`). */
export const DEFAULT_MAX_PAYLOAD_BYTES = 1_048_576;

/**
 * Highest `maxPayloadBytes`: RabbitMQ's default `max_message_size` (128 MiB). MariaDB's default
 * `max_allowed_packet` (16 MiB) is lower: raise it before allowing payloads near that size.
 */
export const MAX_PAYLOAD_BYTES_LIMIT = 134_217_728;

/** An HTTP header name: an RFC 9110 token. */
export const HTTP_HEADER_NAME = /^[!#$%&'*+.^_`|~0-9a-z-]+$/i;
