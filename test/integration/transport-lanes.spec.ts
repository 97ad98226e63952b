import { INestApplicationContext, Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { OutboxMessage, OutboxService } from '../../lib';
import { OutboxAdmin, OutboxDispatcher, StuckDetector } from '../../lib/entries/admin';
import { OUTBOX_TRANSPORTS, OutboxTransport, OutboxTransports } from '../../lib/entries/transports';
import { CapturingOutboxTransport } from '../../lib/testing';
import { testDatabase } from '../support/database';
import { createTestApp } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS, waitUntil } from '../support/wait';

const database = testDatabase('it_transport_lanes');

/** A transport whose sends hang until the test releases them, as one whose broker stopped answering. */
@Injectable()
class HangingTransport implements OutboxTransport {
  /** Sends started and not yet released. */
  hanging = 0;
  private release!: () => void;
  private released = new Promise<void>((resolve) => (this.release = resolve));

  async send(): Promise<void> {
    this.hanging += 1;
    await this.released;
    this.hanging -= 1;
  }

  releaseAll(): void {
    this.release();
  }
}

const PARTNER_TYPES = 'partner.';

describe('Transports and their lanes', () => {
  let app: INestApplicationContext;
  let outbox: OutboxService;
  let transports: OutboxTransports;
  let main: CapturingOutboxTransport;
  let partner: CapturingOutboxTransport;
  let slow: HangingTransport;

  beforeAll(async () => {
    await database.reset();
    app = await createTestApp({
      database,
      statics: {
        transports: {
          default: CapturingOutboxTransport,
          partner: { transport: CapturingOutboxTransport, batchSize: 10, dispatchConcurrency: 2 },
          slow: { transport: HangingTransport, batchSize: 5, dispatchConcurrency: 1 },
        },
      },
      outbox: {
        pollIntervalMs: 100,
        route: (message) => (message.type.startsWith(PARTNER_TYPES) ? 'partner' : undefined),
      },
    });
    outbox = app.get(OutboxService);
    transports = app.get(OUTBOX_TRANSPORTS);
    main = transports.get('default') as CapturingOutboxTransport;
    partner = transports.get('partner') as CapturingOutboxTransport;
    slow = transports.get('slow') as HangingTransport;
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(async () => {
    slow?.releaseAll();
    await app?.close();
  });

  async function publish(message: Partial<OutboxMessage> & { type: string }): Promise<string> {
    const full: OutboxMessage = { payload: { at: Date.now() }, ...message };
    return (await app.get(DataSource).transaction((manager) => outbox.publish(full, { manager }))).messageId;
  }

  const sentBy = (transport: CapturingOutboxTransport, messageId: string) => transport.messages.some((message) => message.messageId === messageId);

  async function stored(messageId: string): Promise<{ transport: string; status: string; attempts: number; destination: string }> {
    const [row] = await database.sql(`SELECT transport, status, attempts, destination FROM {outbox_message} WHERE message_id = ?`, [messageId]);
    return { transport: row.transport, status: row.status, attempts: Number(row.attempts), destination: row.destination };
  }

  it(
    'sends each message by its own transport, route() or the default transport',
    async () => {
      const plain = await publish({ type: 'order.paid', exchange: 'orders', routingKey: 'order.paid' });
      const chosen = await publish({ type: 'order.paid', transport: 'partner', destination: 'billing' });
      const routed = await publish({ type: `${PARTNER_TYPES}invoice` });
      // A message's own choice wins over route().
      const overridden = await publish({ type: `${PARTNER_TYPES}invoice`, transport: 'default', exchange: '', routingKey: 'q' });
      await waitUntil(() => sentBy(main, plain) && sentBy(partner, chosen) && sentBy(partner, routed) && sentBy(main, overridden), 'every message was sent');
      expect(sentBy(partner, plain) || sentBy(main, chosen) || sentBy(main, routed) || sentBy(partner, overridden)).toBe(false);
      // Sent is not yet settled: the settle commits after the send resolves.
      await waitUntil(async () => (await Promise.all([plain, chosen, routed].map(stored))).every((row) => row.status === 'DONE'), 'the messages were settled');
      expect(await stored(plain)).toMatchObject({ transport: 'default', status: 'DONE' });
      expect(await stored(chosen)).toMatchObject({ transport: 'partner', status: 'DONE', destination: 'billing' });
      expect(await stored(routed)).toMatchObject({ transport: 'partner', status: 'DONE' });
      const sent = partner.messages.find((message) => message.messageId === chosen)!;
      expect(sent).toMatchObject({ transport: 'partner', destination: 'billing', attempts: 0 });
    },
    timeoutFor(WAIT_TIMEOUT_MS),
  );

  it('refuses a transport name that no row could hold, before anything is written', async () => {
    for (const transport of ['', 'has space', 'x'.repeat(101), 'ü']) {
      await expect(publish({ type: 'order.paid', transport })).rejects.toMatchObject({ name: 'OutboxMessageInvalidError', field: 'transport' });
    }
  });

  it(
    'keeps a message for a transport this process lacks, unattempted and reported, until a process that has it sends it',
    async () => {
      const waiting = await publish({ type: 'order.paid', transport: 'later' });
      const marker = await publish({ type: 'marker', exchange: 'm', routingKey: 'm' });
      await waitUntil(() => sentBy(main, marker), 'a later message of the default transport was sent');
      await app.get(OutboxDispatcher).drain();
      expect(await stored(waiting)).toMatchObject({ transport: 'later', status: 'PENDING', attempts: 0 });
      expect((await app.get(StuckDetector).check()).unconfiguredTransports).toEqual({ later: 1 });
      const { byTransport } = (await app.get(OutboxAdmin).stats()).outbox;
      expect(byTransport.later).toMatchObject({ counts: expect.objectContaining({ PENDING: 1 }), due: 1, inFlight: 0 });
      expect(byTransport.default.counts.DONE).toBeGreaterThanOrEqual(2);

      // Another deployment of the application, which has the transport.
      const other = await createTestApp({ database, statics: { transports: { later: CapturingOutboxTransport } }, outbox: { pollIntervalMs: 100 } });
      try {
        const later = other.get(OUTBOX_TRANSPORTS).get('later') as CapturingOutboxTransport;
        await waitUntil(async () => sentBy(later, waiting) && (await stored(waiting)).status === 'DONE', 'the process with the transport sent it');
        expect(await stored(waiting)).toMatchObject({ status: 'DONE', attempts: 0 });
        // Each process claims only its own lanes: the other never saw the default transport's messages.
        expect(later.messages.map((message) => message.transport)).toEqual(['later']);
      } finally {
        await other.close();
      }
      expect((await app.get(StuckDetector).check()).unconfiguredTransports).toEqual({});
    },
    timeoutFor(STARTUP_TIMEOUT_MS, WAIT_TIMEOUT_MS),
  );

  it(
    'claims nothing for a transport that is down, spending no attempt, while other transports go on',
    async () => {
      partner.setAvailable(false);
      try {
        const held: string[] = [];
        const flowing: string[] = [];
        for (let i = 0; i < 20; i++) {
          held.push(await publish({ type: `${PARTNER_TYPES}down`, payload: { i } }));
          flowing.push(await publish({ type: 'order.paid', exchange: 'orders', routingKey: 'order.paid', payload: { i } }));
        }
        await waitUntil(() => flowing.every((id) => sentBy(main, id)), 'the default transport sent all of its messages');
        await app.get(OutboxDispatcher).drain();
        for (const id of held) expect(await stored(id)).toMatchObject({ status: 'PENDING', attempts: 0 });
        expect(held.some((id) => sentBy(partner, id))).toBe(false);

        partner.setAvailable(true);
        await waitUntil(() => held.every((id) => sentBy(partner, id)), 'the partner transport sent its backlog once back');
        await app.get(OutboxDispatcher).drain();
        for (const id of held) expect(await stored(id)).toMatchObject({ status: 'DONE', attempts: 0 });
      } finally {
        partner.setAvailable(true);
      }
    },
    timeoutFor(WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS),
  );

  it(
    'delivers every other transport’s messages while one transport’s sends hang',
    async () => {
      // In one transaction, so that the lane's first claim takes a full batch.
      await app.get(DataSource).transaction(async (manager) => {
        for (let i = 0; i < 10; i++) await outbox.publish({ type: 'report.generated', transport: 'slow', payload: { i } }, { manager });
      });
      await waitUntil(() => slow.hanging === 5, 'the slow lane holds a full batch in flight');
      // One at a time, each delivered before the next is published: the other lanes' latency path.
      for (let i = 0; i < 30; i++) {
        const id = await publish({ type: i % 2 ? 'order.paid' : `${PARTNER_TYPES}paid`, exchange: 'orders', routingKey: 'order.paid', payload: { i } });
        await waitUntil(() => sentBy(main, id) || sentBy(partner, id), `message ${i} of the healthy lanes was delivered`);
      }
      // Still hanging: the healthy lanes did not wait for it.
      expect(slow.hanging).toBe(5);
      expect(Object.keys(app.get(OutboxDispatcher).laneStats()).sort()).toEqual(['default', 'partner', 'slow']);
      slow.releaseAll();
      await app.get(OutboxDispatcher).drain();
      expect(app.get(OutboxDispatcher).laneStats().slow).toMatchObject({ claimed: 10, sent: 10 });
    },
    timeoutFor(WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS),
  );

  describe('delayed messages', () => {
    /** Whether the message's time has come by the database's clock. */
    async function isDue(messageId: string): Promise<boolean> {
      const [row] = await database.sql(`SELECT count(*) AS n FROM {outbox_message} WHERE message_id = ? AND next_attempt_at <= ${database.timeAgo(0)}`, [
        messageId,
      ]);
      return Number(row.n) === 1;
    }

    /**
     * Waits until the message is sent, checking all along that it is not sent before its time:
     * the send is looked for first and the clock second, so a send seen while the database still
     * says "not yet" was early.
     */
    async function sentNoEarlierThanDue(transport: CapturingOutboxTransport, messageId: string): Promise<void> {
      let sawNotDue = false;
      await waitUntil(async () => {
        const sent = sentBy(transport, messageId);
        const due = await isDue(messageId);
        if (sent && !due) throw new Error(`message ${messageId} was sent before its time`);
        if (!due) sawNotDue = true;
        return sent;
      }, `message ${messageId} was sent`);
      // The check above meant something: the message was seen waiting for its time.
      expect(sawNotDue).toBe(true);
    }

    it(
      'sends a message published with delayMs no earlier than its time',
      async () => {
        const delayed = await publish({ type: 'order.reminder', exchange: 'orders', routingKey: 'r', delayMs: 2_000 });
        const now = await publish({ type: 'order.paid', exchange: 'orders', routingKey: 'p' });
        await waitUntil(() => sentBy(main, now), 'the undelayed message was sent');
        await sentNoEarlierThanDue(main, delayed);
        await app.get(OutboxDispatcher).drain();
        expect(await stored(delayed)).toMatchObject({ status: 'DONE', attempts: 0 });
      },
      timeoutFor(WAIT_TIMEOUT_MS),
    );

    it(
      'sends a message published with availableAt no earlier than that instant; a past instant means now',
      async () => {
        const later = await publish({ type: 'order.reminder', transport: 'partner', availableAt: new Date(Date.now() + 2_000) });
        const past = await publish({ type: 'order.reminder', transport: 'partner', availableAt: new Date(0) });
        await waitUntil(() => sentBy(partner, past), 'the message available in the past was sent');
        await sentNoEarlierThanDue(partner, later);
      },
      timeoutFor(WAIT_TIMEOUT_MS),
    );

    it(
      'holds the later messages of its ordering key behind a delayed head',
      async () => {
        const head = await publish({ type: 'k.first', exchange: 'o', routingKey: 'k', orderingKey: 'delayed-key', delayMs: 2_000 });
        const behind = await publish({ type: 'k.second', exchange: 'o', routingKey: 'k', orderingKey: 'delayed-key' });
        const other = await publish({ type: 'k.other', exchange: 'o', routingKey: 'k', orderingKey: 'other-key' });
        await waitUntil(() => sentBy(main, other), 'another key went on');
        await sentNoEarlierThanDue(main, head);
        await waitUntil(() => sentBy(main, behind), 'the message behind the head was sent');
        const order = main.messages.map((message) => message.messageId).filter((id) => id === head || id === behind);
        expect(order).toEqual([head, behind]);
      },
      timeoutFor(WAIT_TIMEOUT_MS),
    );

    it('refuses a delay it cannot honour', async () => {
      await expect(publish({ type: 'x', exchange: '', routingKey: 'q', delayMs: -1 })).rejects.toMatchObject({ field: 'delayMs' });
      await expect(publish({ type: 'x', exchange: '', routingKey: 'q', delayMs: 1.5 })).rejects.toMatchObject({ field: 'delayMs' });
      await expect(publish({ type: 'x', exchange: '', routingKey: 'q', delayMs: 400 * 24 * 3_600_000 })).rejects.toMatchObject({ field: 'delayMs' });
      await expect(publish({ type: 'x', exchange: '', routingKey: 'q', availableAt: new Date(NaN) })).rejects.toMatchObject({ field: 'availableAt' });
      await expect(publish({ type: 'x', exchange: '', routingKey: 'q', availableAt: new Date(), delayMs: 5 })).rejects.toMatchObject({ field: 'delayMs' });
    });
  });
});
