import { Module } from '@nestjs/common';
import { OrdersModule } from '../orders/orders.module';
import { PaymentWebhooksController } from './payment-webhooks.controller';

/** Receives the payment provider's webhooks through the inbox. */
@Module({
  imports: [OrdersModule],
  controllers: [PaymentWebhooksController],
})
export class PaymentsModule {}
