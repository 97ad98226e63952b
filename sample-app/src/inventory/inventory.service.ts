import { Transactional, TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable, OnModuleInit } from '@nestjs/common';
import { Repository } from 'typeorm';
import { OutboxService } from '../../../lib';
import {
  INVENTORY_EXCHANGE,
  INVENTORY_OUT_OF_STOCK,
  INVENTORY_RESERVED,
  OrderPaidEvent,
  outOfStockBizKey,
  reservedBizKey,
  SAMPLE_SKU,
  SAMPLE_SKU_INITIAL_STOCK,
  StockOutcomeEvent,
  UNITS_PER_ORDER,
} from './inventory.constants';
import { StockItem } from './stock-item.entity';
import { ReservationStatus, StockReservation } from './stock-reservation.entity';

/** What `GET /inventory` shows. */
export interface InventorySnapshot {
  stock: StockItem[];
  reservations: StockReservation[];
}

/**
 * Inventory use cases. Every write goes through `txHost.tx`, the EntityManager of the current
 * transaction: called from the inbox handler, that is the transaction that also holds the
 * inbox mark, so the reservation, the stock change, the outgoing event and "this message was
 * handled" commit together or not at all. A repository from `@InjectRepository` would write
 * outside it.
 */
@Injectable()
export class InventoryService implements OnModuleInit {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly outbox: OutboxService,
  ) {}

  /** Seeds the sample SKU when it has no row yet; instances starting together agree (ON CONFLICT DO NOTHING). */
  async onModuleInit(): Promise<void> {
    await this.txHost.withTransaction(() =>
      this.stock.createQueryBuilder().insert().values({ sku: SAMPLE_SKU, available: SAMPLE_SKU_INITIAL_STOCK }).orIgnore().execute(),
    );
  }

  /**
   * Reserves stock for a paid order and publishes the outcome through the outbox, in the
   * current transaction: `inventory.reserved` when enough units were available (they are taken),
   * `inventory.out-of-stock` otherwise (nothing is taken). Running out of stock is a business
   * outcome, not an error: an error would only make the inbox retry.
   */
  @Transactional()
  async reserveForPaidOrder(event: OrderPaidEvent): Promise<StockReservation> {
    const taken = await this.stock
      .createQueryBuilder()
      .update()
      .set({ available: () => 'available - :quantity' })
      .where('sku = :sku AND available >= :quantity', { sku: SAMPLE_SKU, quantity: UNITS_PER_ORDER })
      .execute();
    const status = taken.affected === 1 ? ReservationStatus.RESERVED : ReservationStatus.OUT_OF_STOCK;
    const reservation = await this.reservations.save(this.reservations.create({ orderId: event.orderId, sku: SAMPLE_SKU, quantity: UNITS_PER_ORDER, status }));
    const reserved = status === ReservationStatus.RESERVED;
    await this.outbox.publish<StockOutcomeEvent>({
      type: reserved ? INVENTORY_RESERVED : INVENTORY_OUT_OF_STOCK,
      exchange: INVENTORY_EXCHANGE,
      routingKey: reserved ? INVENTORY_RESERVED : INVENTORY_OUT_OF_STOCK,
      bizKey: reserved ? reservedBizKey(event.orderId) : outOfStockBizKey(event.orderId),
      payload: { orderId: event.orderId, sku: SAMPLE_SKU, quantity: UNITS_PER_ORDER },
    });
    return reservation;
  }

  /** Stock levels and the latest 100 reservations, newest first. */
  async snapshot(): Promise<InventorySnapshot> {
    const [stock, reservations] = await Promise.all([this.stock.find({ order: { sku: 'ASC' } }), this.reservations.find({ order: { id: 'DESC' }, take: 100 })]);
    return { stock, reservations };
  }

  private get stock(): Repository<StockItem> {
    return this.txHost.tx.getRepository(StockItem);
  }

  private get reservations(): Repository<StockReservation> {
    return this.txHost.tx.getRepository(StockReservation);
  }
}
