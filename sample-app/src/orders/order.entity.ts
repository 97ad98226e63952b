import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';
import { TIMESTAMP_COLUMN } from '../database';

/** Life cycle of an order in this sample. */
export enum OrderStatus {
  NEW = 'NEW',
  PAID = 'PAID',
  SHIPPED = 'SHIPPED',
  CANCELLED = 'CANCELLED',
}

/** The business row that changes in the same transaction as the outbox message it causes. */
@Entity({ name: 'sample_order' })
export class Order {
  @PrimaryGeneratedColumn()
  id!: number;

  @Column({ name: 'amount_cents', type: 'integer' })
  amountCents!: number;

  @Column({ type: 'varchar', length: 20 })
  status!: OrderStatus;

  @CreateDateColumn({ name: 'created_at', type: TIMESTAMP_COLUMN })
  createdAt!: Date;

  @UpdateDateColumn({ name: 'updated_at', type: TIMESTAMP_COLUMN })
  updatedAt!: Date;
}
