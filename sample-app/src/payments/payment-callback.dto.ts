import { Type } from 'class-transformer';
import { IsIn, IsInt, IsString, Max, Min, ValidateNested } from 'class-validator';
import { PAYMENT_SUCCEEDED } from './payments.constants';

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
  @IsIn([PAYMENT_SUCCEEDED])
  type!: string;

  @ValidateNested()
  @Type(() => PaymentDataDto)
  data!: PaymentDataDto;
}
