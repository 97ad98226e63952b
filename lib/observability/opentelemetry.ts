import type * as OpenTelemetry from '@opentelemetry/api';

const PACKAGE = '@opentelemetry/api';

/**
 * The OpenTelemetry API when the application installs it (an optional peer dependency), else
 * undefined: metrics are then not recorded at all. Without an SDK registered, the API's meter
 * does nothing, at the cost of a function call per event.
 */
export function openTelemetryIfInstalled(): typeof OpenTelemetry | undefined {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require(PACKAGE) as typeof OpenTelemetry;
  } catch (error) {
    if ((error as NodeJS.ErrnoException)?.code === 'MODULE_NOT_FOUND') return undefined;
    throw error;
  }
}
