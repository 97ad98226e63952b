import { RabbitSubscribe } from '@golevelup/nestjs-rabbitmq';
import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { InboxHandler } from 'nestjs-outbox';
import { Entity, PrimaryColumn } from 'typeorm';

/** The exchange of this run: a name of its own, so that runs on a shared broker stay apart. */
export const EXCHANGE = process.env.FRESH_APP_EXCHANGE ?? 'fresh-app';

@Entity('fresh_app_receipt')
export class Receipt {
  @PrimaryColumn() reference!: string;
}

@Injectable()
export class OrderPlacedConsumer {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  @RabbitSubscribe({ exchange: EXCHANGE, routingKey: 'order.placed', queue: `${EXCHANGE}.order-placed` })
  @InboxHandler({ consumer: 'fresh-app' })
  async onOrderPlaced(event: { reference: string }): Promise<void> {
    await this.txHost.tx.getRepository(Receipt).insert({ reference: event.reference });
  }
}
