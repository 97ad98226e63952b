import { Body, Controller, Get, HttpCode, HttpStatus, Param, ParseIntPipe, Post } from '@nestjs/common';
import { CreateOrderDto } from './create-order.dto';
import { Order } from './order.entity';
import { OrdersService } from './orders.service';

/** HTTP surface of the order service. */
@Controller('orders')
export class OrdersController {
  constructor(private readonly orders: OrdersService) {}

  /** Creates a NEW order. */
  @Post()
  create(@Body() body: CreateOrderDto): Promise<Order> {
    return this.orders.create(body.amountCents);
  }

  @Get(':id')
  get(@Param('id', ParseIntPipe) id: number): Promise<Order> {
    return this.orders.get(id);
  }

  /** Marks the order PAID and publishes `order.paid` through the outbox. */
  @Post(':id/pay')
  @HttpCode(HttpStatus.OK)
  pay(@Param('id', ParseIntPipe) id: number): Promise<Order> {
    return this.orders.pay(id);
  }

  /** Marks a PAID order SHIPPED and sends `order.shipped` to the logistics partner by HTTP, through the outbox. */
  @Post(':id/ship')
  @HttpCode(HttpStatus.OK)
  ship(@Param('id', ParseIntPipe) id: number): Promise<Order> {
    return this.orders.ship(id);
  }

  /** Cancels a NEW order, or a PAID one whose `order.paid` message is not sent yet; 409 otherwise. */
  @Post(':id/cancel')
  @HttpCode(HttpStatus.OK)
  cancel(@Param('id', ParseIntPipe) id: number): Promise<Order> {
    return this.orders.cancel(id);
  }
}
