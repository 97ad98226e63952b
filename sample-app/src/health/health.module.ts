import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { OutboxHealthIndicator } from '../../../lib/health';
import { HealthController } from './health.controller';

/** The service's health check for `@nestjs/terminus`, with the outbox's indicator. */
@Module({
  imports: [TerminusModule],
  controllers: [HealthController],
  providers: [OutboxHealthIndicator],
})
export class HealthModule {}
