import { plainToInstance } from 'class-transformer';
import { validateSync, ValidationError } from 'class-validator';
import { OutboxOptionsError } from '../errors';
import { awaitStandbyProblems, resolveAwaitStandby } from './await-standby';
import { applyClaimLease, applyLeaseDefaults, LeaseDerivedOption } from './claim-lease';
import { OutboxModuleOptions, OutboxModuleOptionsInput } from './outbox-module-options';

/** Options fixed where the module is declared (`OutboxModuleStaticOptions`), never returned by an async factory. */
const STATIC_OPTIONS = ['tableName', 'inboxTableName', 'dataSourceName', 'transport', 'transports', 'defaultTransport', 'isGlobal'];

/** Applies defaults and validates; throws `OutboxOptionsError` naming every bad option. */
export function validateOutboxOptions(input: OutboxModuleOptionsInput | undefined): OutboxModuleOptions {
  const { options, problems } = checkOutboxOptions(input);
  if (problems.length > 0) throw new OutboxOptionsError(problems);
  return options;
}

/** What `validateOutboxOptions` would refuse, for reporting it beside the static options' problems. */
export function runtimeOptionProblems(input: OutboxModuleOptionsInput | undefined): string[] {
  return checkOutboxOptions(input).problems;
}

function checkOutboxOptions(input: OutboxModuleOptionsInput | undefined): { options: OutboxModuleOptions; problems: string[] } {
  const options = plainToInstance(OutboxModuleOptions, input ?? {}, { exposeDefaultValues: true });
  const derived = applyClaimLease(options, input ?? {});
  applyLeaseDefaults(options, input ?? {});
  const problems = validateSync(options, { forbidUnknownValues: true, whitelist: false }).flatMap(describe);
  problems.push(...unknownKeys(input), ...crossFieldProblems(options, derived));
  problems.push(...awaitStandbyProblems(options.awaitStandby), ...standbyWaitFitsLease(options));
  if (options.isFatalError !== undefined && typeof options.isFatalError !== 'function') {
    problems.push('isFatalError must be a function');
  }
  if (options.route !== undefined && typeof options.route !== 'function') {
    problems.push('route must be a function of the message returning a transport name (or undefined for defaultTransport)');
  }
  return { options, problems };
}

function describe(error: ValidationError): string[] {
  return Object.values(error.constraints ?? {}).map((text) => (text.startsWith(error.property) ? text : `${error.property}: ${text}`));
}

function unknownKeys(input: OutboxModuleOptionsInput | undefined): string[] {
  const known = new Set(Object.keys(new OutboxModuleOptions()));
  return Object.keys(input ?? {})
    .filter((key) => !known.has(key))
    .map((key) =>
      STATIC_OPTIONS.includes(key)
        ? `${key} shapes the module, so it cannot come from an async factory: pass it to OutboxModule.forRootAsync({ ${key}, useFactory }) beside the factory`
        : `${key} is not an OutboxModule option`,
    );
}

function crossFieldProblems(o: OutboxModuleOptions, derived: LeaseDerivedOption[]): string[] {
  const problems: string[] = [];
  // Name what the user set: a value derived from the lease is the lease's doing.
  const named = (option: LeaseDerivedOption) => (derived.includes(option) ? `${option} (${o[option]}, derived from claimLeaseMs ${o.claimLeaseMs})` : option);
  if (o.backoffMaxMs < o.backoffBaseMs) problems.push('backoffMaxMs must be at least backoffBaseMs');
  if (o.stuckWarnAfterMs > o.stuckReclaimAfterMs) {
    problems.push(`${named('stuckWarnAfterMs')} must not exceed ${named('stuckReclaimAfterMs')}`);
  }
  // A claim reclaimed while its send may still be waiting for a confirm would be sent twice.
  if (o.stuckReclaimAfterMs <= o.sendTimeoutMs) {
    problems.push(`${named('stuckReclaimAfterMs')} must exceed ${named('sendTimeoutMs')}, or live sends would be reclaimed`);
  }
  // One renewal late (a busy event loop, a slow statement) must not cost a live claim.
  if (o.leaseRenewIntervalMs !== undefined && o.leaseRenewIntervalMs > o.stuckReclaimAfterMs / 2) {
    problems.push(
      `${named('leaseRenewIntervalMs')} must be at most half of ${named('stuckReclaimAfterMs')}, or one late renewal would let a live claim be taken over`,
    );
  }
  return problems;
}

/** A batch waits for the standbys while claimed: the wait and the send must end before the claim may be reclaimed. */
function standbyWaitFitsLease(o: OutboxModuleOptions): string[] {
  if (!o.awaitStandby || awaitStandbyProblems(o.awaitStandby).length > 0) return [];
  const { timeoutMs } = resolveAwaitStandby(o.awaitStandby);
  if (timeoutMs + o.sendTimeoutMs < o.stuckReclaimAfterMs) return [];
  return [
    `awaitStandby.timeoutMs (${timeoutMs}) + sendTimeoutMs (${o.sendTimeoutMs}) must stay below stuckReclaimAfterMs (${o.stuckReclaimAfterMs}), or waiting batches would be reclaimed`,
  ];
}
