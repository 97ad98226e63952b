import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { OutboxHealthIndicator } from '../../../lib/health';

/**
 * `GET /health`: 200 while the database answers, the RabbitMQ transport is connected and no
 * message waits more than a minute past its time; 503 with the reasons otherwise. The logistics
 * partner's outage is left out (its lane waits it out, holding up nothing else), but shown.
 */
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly outbox: OutboxHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.outbox.isHealthy('outbox', { maxLagMs: 60_000, transports: ['default'] })]);
  }
}
