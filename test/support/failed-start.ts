import type { INestApplicationContext } from '@nestjs/common';

/**
 * Closes an application whose initialisation failed, running the shutdown hooks as `close()`
 * would: its DataSources, the library's worker pool and the broker connection end with it. Nest's
 * own `close()` first awaits the failed initialisation and so rejects before running any hook,
 * leaving those connections open: a MariaDB pool then holds the test process open after the run.
 */
export async function closeFailedStart(context: INestApplicationContext): Promise<void> {
  const failed = context as unknown as { initializationPromise?: Promise<unknown> };
  if (!('initializationPromise' in failed)) throw new Error('closeFailedStart: Nest no longer keeps initializationPromise; find another way to close');
  failed.initializationPromise = undefined;
  await context.close();
}
