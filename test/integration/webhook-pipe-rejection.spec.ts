import { BadRequestException, Body, Controller, INestApplication, Post, ValidationPipe } from '@nestjs/common';
import { IsInt, Min } from 'class-validator';
import { randomUUID } from 'node:crypto';
import { InboxWorker } from '../../lib/entries/admin';
import { WebhookInbox } from '../../lib/entries/webhooks';
import { testDatabase } from '../support/database';
import { createTestHttpApp } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS, waitUntil } from '../support/wait';

const database = testDatabase('it_webhook_pipe_rejection');

class RefundDto {
  @IsInt()
  @Min(1)
  orderId!: number;
}

@Controller('hooks')
class RefundWebhooks {
  @Post('refunds')
  @WebhookInbox({ consumer: 'refunds', maxAttempts: 10 })
  async onRefund(@Body(new ValidationPipe({ whitelist: true, forbidNonWhitelisted: true })) refund: RefundDto): Promise<void> {
    // The method's own 400 is its decision about this attempt, not a refusal of the input by a pipe.
    if (refund.orderId === 13) throw new BadRequestException('order 13 cannot be refunded yet');
  }
}

describe('@WebhookInbox with a method whose pipe refuses the stored request', () => {
  let app: INestApplication;
  let url: string;

  beforeAll(async () => {
    await database.reset();
    ({ app, url } = await createTestHttpApp({
      database,
      outbox: { pollIntervalMs: 50, backoffBaseMs: 10, backoffMaxMs: 20, backoffJitter: 0 },
      controllers: [RefundWebhooks],
    }));
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(async () => {
    await app?.close();
  });

  const refund = async (body: unknown) => {
    const id = `msg_${randomUUID()}`;
    const response = await fetch(`${url}/hooks/refunds`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'webhook-id': id },
      body: JSON.stringify(body),
    });
    expect(response.status).toBe(200);
    return id;
  };
  const inboxRow = async (messageId: string) => {
    const [row] = await database.sql(`SELECT status, attempts, last_error FROM {inbox_message} WHERE consumer = 'refunds' AND message_id = ?`, [messageId]);
    return row && { ...row, attempts: Number(row.attempts) };
  };

  it(
    'gives the delivery up after one attempt, keeping the validation messages in last_error',
    async () => {
      const id = await refund({ orderId: 'seven', note: 'x' });
      await waitUntil(async () => (await inboxRow(id))?.status === 'MANUAL_REQUIRED', 'the refused delivery is given up', WAIT_TIMEOUT_MS);
      const row = await inboxRow(id);
      expect(row.attempts).toBe(1);
      expect(row.last_error).toMatch(/^InputRejectedError: the method's pipes refused the input \(400\): /);
      expect(row.last_error).toContain('property note should not exist');
      expect(row.last_error).toContain('orderId must be an integer number');
    },
    timeoutFor(WAIT_TIMEOUT_MS),
  );

  it(
    'retries a client error the method threw itself',
    async () => {
      const id = await refund({ orderId: 13 });
      await waitUntil(async () => ((await inboxRow(id))?.attempts ?? 0) >= 2, 'the method is attempted again', WAIT_TIMEOUT_MS);
      expect((await inboxRow(id)).last_error).toContain('order 13 cannot be refunded yet');
      await app.get(InboxWorker).drain();
    },
    timeoutFor(WAIT_TIMEOUT_MS),
  );
});
