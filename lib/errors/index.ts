export * from './outbox.error';
export * from './transport.errors';
export * from './database.errors';
export * from './transaction.errors';
export * from './options.errors';
export * from './input.errors';
