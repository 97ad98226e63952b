import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { InventoryController } from './inventory.controller';
import { InventoryService } from './inventory.service';
import { OrderPaidConsumer } from './order-paid.consumer';
import { StockItem } from './stock-item.entity';
import { StockReservation } from './stock-reservation.entity';

/**
 * The inventory side: consumes `order.paid` through an inbox handler, reserves stock and
 * publishes the outcome through the outbox. It shares nothing with the orders module but the
 * broker; in a real system it would be a service of its own.
 */
@Module({
  // Registers the entities (autoLoadEntities picks them up); the service writes through TransactionHost.
  imports: [TypeOrmModule.forFeature([StockItem, StockReservation])],
  controllers: [InventoryController],
  providers: [InventoryService, OrderPaidConsumer],
})
export class InventoryModule {}
