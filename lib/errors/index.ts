export * from './outbox.error';
export * from './outbox-outside-transaction.error';
export * from './outbox-options.error';
export * from './outbox-schema.error';
export * from './outbox-message-invalid.error';
export * from './non-retryable.error';
export * from './send-timeout.error';
export * from './unroutable-message.error';
