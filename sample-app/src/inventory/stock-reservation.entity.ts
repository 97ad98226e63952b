import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn, Unique } from 'typeorm';
import { TIMESTAMP_COLUMN } from '../database';

/** Outcome of a paid order for the inventory. */
export enum ReservationStatus {
  /** `quantity` units were taken from `available`. */
  RESERVED = 'RESERVED',
  /** Not enough units were available; nothing was taken. */
  OUT_OF_STOCK = 'OUT_OF_STOCK',
}

/**
 * What the inventory decided for one paid order: one row per order. The unique key is a schema
 * invariant, not the dedupe mechanism (the inbox is): a duplicate that got past the inbox, e.g.
 * after its retention window, fails here instead of reserving twice.
 */
@Entity({ name: 'stock_reservation' })
@Unique('UQ_stock_reservation_order_id', ['orderId'])
export class StockReservation {
  @PrimaryGeneratedColumn()
  id!: number;

  @Column({ name: 'order_id', type: 'integer' })
  orderId!: number;

  @Column({ type: 'varchar', length: 64 })
  sku!: string;

  @Column({ type: 'integer' })
  quantity!: number;

  @Column({ type: 'varchar', length: 20 })
  status!: ReservationStatus;

  @CreateDateColumn({ name: 'created_at', type: TIMESTAMP_COLUMN })
  createdAt!: Date;
}
