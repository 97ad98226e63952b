import type * as Golevelup from '@golevelup/nestjs-rabbitmq';

const PACKAGE = '@golevelup/nestjs-rabbitmq';

let loaded: typeof Golevelup | undefined;

/**
 * golevelup, loaded when first needed (a `@InboxHandler()`, the RabbitMQ transport), so that an
 * application using only webhooks and HTTP need not install it or amqplib.
 */
export function golevelup(): typeof Golevelup {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (loaded ??= require(PACKAGE) as typeof Golevelup);
}

/** golevelup when it is installed, else undefined. */
export function golevelupIfInstalled(): typeof Golevelup | undefined {
  try {
    return golevelup();
  } catch (error) {
    if ((error as NodeJS.ErrnoException)?.code === 'MODULE_NOT_FOUND') return undefined;
    throw error;
  }
}

/** A golevelup `Nack`: `requeue` true to have the broker redeliver, false to dead-letter. */
export function nack(requeue: boolean): Golevelup.Nack {
  return new (golevelup().Nack)(requeue);
}

/** Whether `value` is a golevelup `Nack`. */
export function isNack(value: unknown): value is Golevelup.Nack {
  return loaded !== undefined && value instanceof loaded.Nack;
}
