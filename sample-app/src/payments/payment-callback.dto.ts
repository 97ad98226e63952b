import { Type } from 'class-transformer';
import { IsIn, IsInt, IsString, Max, Min, ValidateNested } from 'class-validator';
import { PAYMENT_FAILED, PAYMENT_SUCCEEDED } from './payments.constants';

/** What the provider says was paid. */
export class PaymentDataDto {
  @IsInt()
  @Min(1)
  @Max(2_147_483_647)
  orderId!: number;

  @IsString()
  paymentId!: string;
}

/** Body of the payment provider's callback, `POST /webhooks/payments`. */
export class PaymentCallbackDto {
  // Every event type the provider sends for an order: one refused here would be retried, then
  // park the order's key, and a later payment.succeeded for the order would wait behind it.
  @IsIn([PAYMENT_SUCCEEDED, PAYMENT_FAILED])
  type!: typeof PAYMENT_SUCCEEDED | typeof PAYMENT_FAILED;

  @ValidateNested()
  @Type(() => PaymentDataDto)
  data!: PaymentDataDto;
}
