import { IsInt, Max, Min } from 'class-validator';

/** Body of `POST /orders`. */
export class CreateOrderDto {
  /** Order total in cents: a positive integer that fits a PostgreSQL `integer`. */
  @IsInt()
  @Min(1)
  @Max(2_147_483_647)
  amountCents!: number;
}
