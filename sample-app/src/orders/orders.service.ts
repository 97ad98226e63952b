import { Transactional, TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ConflictException, Injectable, NotFoundException } from '@nestjs/common';
import { Repository } from 'typeorm';
import { MessageStatus, OutboxService } from '../../../lib';
import { OutboxAdmin } from '../../../lib/entries/admin';
import { rowLock } from '../database';
import { Order, OrderStatus } from './order.entity';
import { LOGISTICS_TRANSPORT, WAREHOUSE_ENDPOINT } from '../logistics/logistics.constants';
import { ORDER_PAID, ORDER_SHIPPED, ORDERS_EXCHANGE, OrderPaidEvent, orderPaidBizKey, OrderShippedEvent, orderShippedBizKey } from './orders.constants';

const MAX_ORDER_ID = 2_147_483_647;

/**
 * Order use cases. Every write goes through `txHost.tx` (the EntityManager of the current
 * `@Transactional()` context): a repository injected with `@InjectRepository` would write
 * outside the transaction, and the order and its outbox message would no longer commit together.
 */
@Injectable()
export class OrdersService {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly outbox: OutboxService,
    private readonly outboxAdmin: OutboxAdmin,
  ) {}

  @Transactional()
  async create(amountCents: number): Promise<Order> {
    return this.orders.save(this.orders.create({ amountCents, status: OrderStatus.NEW }));
  }

  async get(id: number): Promise<Order> {
    const order = isOrderId(id) ? await this.orders.findOneBy({ id }) : null;
    if (!order) throw new NotFoundException(`Order ${id} does not exist`);
    return order;
  }

  /**
   * Marks the order PAID and stores its `order.paid` message in the same transaction: the message
   * exists if and only if the payment committed, and it is sent after the commit.
   * Paying a PAID order again changes nothing (the message was stored with the first payment).
   */
  @Transactional()
  async pay(id: number): Promise<Order> {
    const order = await this.lockOrder(id);
    if (order.status === OrderStatus.PAID) return order;
    if (order.status !== OrderStatus.NEW) {
      throw new ConflictException(`Order ${id} is ${order.status}; only a NEW order can be paid`);
    }
    await this.setStatus(order, OrderStatus.PAID);
    await this.outbox.publish<OrderPaidEvent>({
      type: ORDER_PAID,
      exchange: ORDERS_EXCHANGE,
      routingKey: ORDER_PAID,
      bizKey: orderPaidBizKey(id),
      payload: { orderId: order.id, amountCents: order.amountCents },
    });
    return order;
  }

  /**
   * Marks a PAID order SHIPPED and stores its `order.shipped` message for the logistics partner,
   * in the same transaction. The message goes by HTTP, through the outbox's `logistics` transport,
   * to the endpoint it names; RabbitMQ never sees it. Shipping a SHIPPED order again changes nothing.
   */
  @Transactional()
  async ship(id: number): Promise<Order> {
    const order = await this.lockOrder(id);
    if (order.status === OrderStatus.SHIPPED) return order;
    if (order.status !== OrderStatus.PAID) {
      throw new ConflictException(`Order ${id} is ${order.status}; only a PAID order can be shipped`);
    }
    await this.setStatus(order, OrderStatus.SHIPPED);
    await this.outbox.publish<OrderShippedEvent>({
      type: ORDER_SHIPPED,
      transport: LOGISTICS_TRANSPORT,
      destination: WAREHOUSE_ENDPOINT,
      bizKey: orderShippedBizKey(id),
      payload: { orderId: order.id },
    });
    return order;
  }

  /**
   * Reverts an order that is NEW, or PAID while its `order.paid` message has not been sent yet
   * (that message is abandoned in the same transaction and will never be sent). Once the message
   * is sent, or being sent, the payment is public and the order can no longer be cancelled here.
   */
  @Transactional()
  async cancel(id: number): Promise<Order> {
    const order = await this.lockOrder(id);
    switch (order.status) {
      case OrderStatus.CANCELLED:
        return order;
      case OrderStatus.SHIPPED:
        throw new ConflictException(`Order ${id} is SHIPPED and can no longer be cancelled`);
      case OrderStatus.NEW:
        await this.setStatus(order, OrderStatus.CANCELLED);
        return order;
      case OrderStatus.PAID: {
        const abandoned = await this.outbox.cancel(orderPaidBizKey(id), ORDER_PAID);
        if (abandoned === 0) throw new ConflictException(await this.whyNotCancellable(id));
        await this.setStatus(order, OrderStatus.CANCELLED);
        return order;
      }
    }
  }

  private get orders(): Repository<Order> {
    return this.txHost.tx.getRepository(Order);
  }

  /** Loads the order with a row lock, so that pay and cancel of one order run one after the other. */
  private async lockOrder(id: number): Promise<Order> {
    const order = isOrderId(id) ? await this.orders.findOne(rowLock<Order>({ id })) : null;
    if (!order) throw new NotFoundException(`Order ${id} does not exist`);
    return order;
  }

  private async setStatus(order: Order, status: OrderStatus): Promise<void> {
    await this.orders.update({ id: order.id }, { status });
    Object.assign(order, await this.orders.findOneByOrFail({ id: order.id }));
  }

  /** Why `outbox.cancel()` found nothing to abandon, in words for the API client. */
  private async whyNotCancellable(id: number): Promise<string> {
    const message = await this.outboxAdmin.findMessage({ bizKey: orderPaidBizKey(id), type: ORDER_PAID });
    const prefix = `Order ${id} cannot be cancelled:`;
    switch (message?.status) {
      case MessageStatus.DONE:
        return `${prefix} its ${ORDER_PAID} message was already sent at ${message.processedAt?.toISOString()}; consumers have seen the payment, so revert it with a refund instead`;
      case MessageStatus.PROCESSING:
        return `${prefix} its ${ORDER_PAID} message is being sent right now and can no longer be withdrawn; revert the payment with a refund instead`;
      case MessageStatus.MANUAL_REQUIRED:
        return `${prefix} its ${ORDER_PAID} message could not be sent and waits for an operator (MANUAL_REQUIRED); resolve it before cancelling`;
      default:
        return `${prefix} it is PAID but no unsent ${ORDER_PAID} message was found (status ${message?.status ?? 'none'})`;
    }
  }
}

function isOrderId(id: number): boolean {
  return Number.isSafeInteger(id) && id >= 1 && id <= MAX_ORDER_ID;
}
