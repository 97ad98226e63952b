import { EventEmitter } from 'node:events';
import { DeliveryHolds } from '../../lib/inbox/delivery-holds';

describe('DeliveryHolds', () => {
  it('ends every hold when a watched connection disconnects', async () => {
    const holds = new DeliveryHolds();
    const connection = new EventEmitter();
    holds.watch(connection);
    const held = holds.hold(60_000);
    connection.emit('disconnect', {});
    await expect(held).resolves.toBeUndefined();
    holds.close();
  });

  it('ends every hold at close, holds nothing afterwards, and stops watching', async () => {
    const holds = new DeliveryHolds();
    const connection = new EventEmitter();
    holds.watch(connection);
    const held = holds.hold(60_000);
    holds.close();
    await held;
    await holds.hold(60_000);
    expect(connection.listenerCount('disconnect')).toBe(0);
  });
});
