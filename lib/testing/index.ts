export { CapturingOutboxTransport } from './capturing-outbox.transport';
export type { CapturedMessage, FailedSend, SendFailure } from './capturing-outbox.transport';
export { OutboxTestKit, OutboxTestKitError, flushOutbox } from './outbox-test-kit';
export type { FlushOptions, FlushResult, OutboxTestKitOptions } from './outbox-test-kit';
export type { LoopbackDelivery, LoopbackOutcome } from './loopback-delivery';
export type { LoopbackExchangeType } from './amqp-routing';
export { bindingMatches } from './amqp-routing';
export { OUTBOX_TEST_OPTIONS } from './outbox-test-options';
