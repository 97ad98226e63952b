import { Body, Controller, Get, HttpCode, HttpStatus, Logger, Post, UseGuards } from '@nestjs/common';
import { StandardWebhooksGuard } from '../../../lib/entries/webhooks';
import { OrderShippedEvent } from '../orders/orders.constants';
import { LOGISTICS_WEBHOOK_SECRET } from './logistics.constants';

/**
 * A stand-in for the logistics partner, so that the sample runs alone: it verifies each
 * delivery's Standard Webhooks signature and keeps the shipments it received (in memory, once per
 * webhook id: the outbox delivers at least once).
 */
@Controller('logistics')
export class WarehouseController {
  private readonly logger = new Logger('Warehouse');
  private readonly shipments = new Map<string, OrderShippedEvent>();

  @Post('shipments')
  @HttpCode(HttpStatus.NO_CONTENT)
  @UseGuards(StandardWebhooksGuard.for({ secrets: [LOGISTICS_WEBHOOK_SECRET] }))
  receive(@Body() shipment: OrderShippedEvent): void {
    this.logger.log(`Shipment of order ${shipment.orderId} received`);
    this.shipments.set(String(shipment.orderId), shipment);
  }

  @Get('shipments')
  list(): OrderShippedEvent[] {
    return [...this.shipments.values()];
  }
}
