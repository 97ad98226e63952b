import { Controller, Get, Req, Res } from '@nestjs/common';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { prometheusExporter } from './prometheus-exporter';

/** `GET /metrics`: the outbox's metrics (and any other OpenTelemetry metric) in Prometheus text. */
@Controller('metrics')
export class MetricsController {
  @Get()
  scrape(@Req() request: IncomingMessage, @Res() response: ServerResponse): void {
    prometheusExporter.getMetricsRequestHandler(request, response);
  }
}
