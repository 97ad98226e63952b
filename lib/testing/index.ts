/**
 * `nestjs-outbox/testing`: an application's own tests without a broker, with a capturing
 * transport and a kit that dispatches and delivers to inbox handlers.
 *
 * @module nestjs-outbox/testing
 */

export { CapturingOutboxTransport } from './capturing-outbox.transport';
export type { CapturedMessage, FailedSend, SendFailure } from './capturing-outbox.transport';
export { OutboxTestKit, OutboxTestKitError, flushOutbox } from './outbox-test-kit';
export type { FlushOptions, FlushResult, OutboxTestKitOptions } from './outbox-test-kit';
export type { LoopbackDelivery, LoopbackOutcome } from './loopback-delivery';
export type { LoopbackExchangeType } from './amqp-routing';
export { OUTBOX_TEST_OPTIONS } from './outbox-test-options';
