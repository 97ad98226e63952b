import { ConsoleLogger, INestApplicationContext } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { OutboxService, OutboxTableMissingError } from '../../lib';
import { OUTBOX_TRANSPORT } from '../../lib/entries/transports';
import { CapturingOutboxTransport } from '../../lib/testing';
import { DATABASE_KIND, testDatabase } from '../support/database';
import { createTestApp } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS, waitUntil } from '../support/wait';

const database = testDatabase('it_missing_outbox_table');

/** Renames the outbox table to `to` (from `from`), as an operator's mistake or a migration gone wrong would. */
const rename = (from: string, to: string) =>
  database.sql(DATABASE_KIND === 'postgres' || DATABASE_KIND === 'sqlite' ? `ALTER TABLE {${from}} RENAME TO ${to}` : `RENAME TABLE {${from}} TO {${to}}`);

describe('An outbox table renamed or dropped while the application runs', () => {
  let app: INestApplicationContext;
  let outbox: OutboxService;
  let dataSource: DataSource;
  let transport: CapturingOutboxTransport;
  const errorLines: string[] = [];

  beforeAll(async () => {
    await database.reset();
    const original = ConsoleLogger.prototype.error;
    jest.spyOn(ConsoleLogger.prototype, 'error').mockImplementation(function (this: ConsoleLogger, message: unknown, ...rest: unknown[]) {
      errorLines.push(String(message));
      return original.call(this, message, ...rest);
    });
    app = await createTestApp({ database, outbox: { pollIntervalMs: 50 }, statics: { transport: CapturingOutboxTransport } });
    outbox = app.get(OutboxService);
    dataSource = app.get(DataSource);
    transport = app.get(OUTBOX_TRANSPORT);
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(async () => {
    await app?.close();
    jest.restoreAllMocks();
  });

  const publish = (orderId: number) =>
    dataSource.transaction((manager) =>
      outbox.publish({ type: 'order.paid', exchange: 'orders', routingKey: 'order.paid', payload: { orderId } }, { manager }),
    );

  it(
    'fails publish() and the dispatcher with an error naming the table and what to check, and works again once it is back',
    async () => {
      await rename('outbox_message', 'outbox_message_gone');
      try {
        const failure = await publish(1).catch((error: unknown) => error);
        expect(failure).toBeInstanceOf(OutboxTableMissingError);
        expect((failure as OutboxTableMissingError).table).toMatch(/outbox_message$/);
        expect((failure as Error).message).toMatch(
          /does not exist \(dropped or renamed\?\): check that the module's tableName .* run the library's migrations/,
        );
        await waitUntil(
          () => errorLines.some((line) => /OutboxTableMissingError: the table "[^"]*outbox_message"/.test(line)),
          'the dispatcher logs the missing table',
        );
      } finally {
        await rename('outbox_message_gone', 'outbox_message');
      }
      const { messageId } = await publish(2);
      await waitUntil(
        () => transport.messages.some((message) => message.messageId === messageId),
        'the message published once the table is back is sent',
        WAIT_TIMEOUT_MS,
      );
    },
    timeoutFor(WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS),
  );
});
