import { Module } from '@nestjs/common';
import { MetricsController } from './metrics.controller';

/** Serves the metrics; the SDK itself is registered by importing `prometheus-exporter.ts` first (see main.ts). */
@Module({ controllers: [MetricsController] })
export class MetricsModule {}
