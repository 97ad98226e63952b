import { Transactional, TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { OutboxService } from 'nestjs-outbox';
import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';
import { EXCHANGE } from './order-placed.consumer.js';

@Entity('fresh_app_order')
export class Order {
  @PrimaryGeneratedColumn() id!: number;
  @Column() reference!: string;
}

@Injectable()
export class OrdersService {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly outbox: OutboxService,
  ) {}

  /** Stores an order and its `order.placed` message in one transaction. */
  @Transactional()
  async place(reference: string): Promise<void> {
    const order = await this.txHost.tx.getRepository(Order).save({ reference });
    await this.outbox.publish({
      type: 'order.placed',
      exchange: EXCHANGE,
      routingKey: 'order.placed',
      bizKey: `order-${order.id}:placed`,
      payload: { reference },
    });
  }
}
