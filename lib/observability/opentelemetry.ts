import type * as OpenTelemetry from '@opentelemetry/api';

const PACKAGE = '@opentelemetry/api';

/** The API once looked for: the module, or null when it is not installed. */
let found: typeof OpenTelemetry | null | undefined;

/**
 * The OpenTelemetry API when the application installs it (an optional peer dependency), else
 * undefined: metrics and spans are then not recorded at all. Without an SDK registered, the API
 * records nothing, at the cost of a few function calls per message.
 */
export function openTelemetryIfInstalled(): typeof OpenTelemetry | undefined {
  if (found === undefined) {
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      found = require(PACKAGE) as typeof OpenTelemetry;
    } catch (error) {
      if ((error as NodeJS.ErrnoException)?.code !== 'MODULE_NOT_FOUND') throw error;
      found = null;
    }
  }
  return found ?? undefined;
}
