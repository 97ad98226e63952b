import 'reflect-metadata';
// First: the OpenTelemetry SDK must be registered before the outbox takes its meter.
import './metrics/prometheus-exporter';
import { Logger, ValidationPipe } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module';

async function bootstrap(): Promise<void> {
  // rawBody: webhook signatures are verified, and webhooks stored, as the bytes that were sent.
  const app = await NestFactory.create(AppModule, { rawBody: true });
  app.useGlobalPipes(new ValidationPipe({ whitelist: true, forbidNonWhitelisted: true }));
  // On SIGTERM/SIGINT the outbox dispatcher finishes its in-flight sends and gives back
  // whatever it still holds claimed, so another instance can send it at once; golevelup waits
  // for the inventory handler's deliveries in progress before closing the connection.
  app.enableShutdownHooks();
  const port = Number(process.env.PORT ?? 3000);
  await app.listen(port);
  new Logger('Bootstrap').log(`Sample service (orders, inventory, payment webhooks) listening on port ${port}`);
}

bootstrap().catch((error: unknown) => {
  new Logger('Bootstrap').error(error);
  process.exit(1);
});
