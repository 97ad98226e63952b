import type { Counter, Histogram, ObservableGauge } from '@opentelemetry/api';

/** The instruments, created once the API is there. */
export interface Instruments {
  published: Counter;
  sent: Counter;
  retries: Counter;
  manualRequired: Counter;
  abandoned: Counter;
  claimsLost: Counter;
  received: Counter;
  duplicates: Counter;
  handled: Counter;
  publishToSent: Histogram;
  sendDuration: Histogram;
  processDuration: Histogram;
  rows: ObservableGauge;
  lag: ObservableGauge;
  parkedKeys: ObservableGauge;
  transportUp: ObservableGauge;
}
