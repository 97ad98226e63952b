import { MYSQL8_CONTAINER } from './mysql8-container';

/** Global teardown of integration:mysql8: stops the container its setup started, if any. */
export default async function globalTeardown(): Promise<void> {
  await MYSQL8_CONTAINER.take()?.stop();
}
