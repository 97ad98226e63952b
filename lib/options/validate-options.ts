import { plainToInstance } from 'class-transformer';
import { validateSync, ValidationError } from 'class-validator';
import { OutboxOptionsError } from '../errors';
import { OutboxModuleOptions, OutboxModuleOptionsInput } from './outbox-module-options';

/** Applies defaults and validates; throws `OutboxOptionsError` naming every bad option. */
export function validateOutboxOptions(input: OutboxModuleOptionsInput | undefined): OutboxModuleOptions {
  const options = plainToInstance(OutboxModuleOptions, input ?? {}, { exposeDefaultValues: true });
  const problems = validateSync(options, { forbidUnknownValues: true, whitelist: false }).flatMap(describe);
  problems.push(...unknownKeys(input), ...crossFieldProblems(options));
  if (options.isFatalError !== undefined && typeof options.isFatalError !== 'function') {
    problems.push('isFatalError must be a function');
  }
  if (problems.length > 0) throw new OutboxOptionsError(problems);
  return options;
}

function describe(error: ValidationError): string[] {
  return Object.values(error.constraints ?? {}).map((text) =>
    text.startsWith(error.property) ? text : `${error.property}: ${text}`,
  );
}

function unknownKeys(input: OutboxModuleOptionsInput | undefined): string[] {
  const known = new Set(Object.keys(new OutboxModuleOptions()));
  return Object.keys(input ?? {})
    .filter((key) => !known.has(key))
    .map((key) => `${key} is not an OutboxModule option`);
}

function crossFieldProblems(o: OutboxModuleOptions): string[] {
  const problems: string[] = [];
  if (o.backoffMaxMs < o.backoffBaseMs) problems.push('backoffMaxMs must be at least backoffBaseMs');
  if (o.stuckWarnAfterMs > o.stuckReclaimAfterMs) {
    problems.push('stuckWarnAfterMs must not exceed stuckReclaimAfterMs');
  }
  // A claim reclaimed while its send may still be waiting for a confirm would be sent twice.
  if (o.stuckReclaimAfterMs <= o.sendTimeoutMs) {
    problems.push('stuckReclaimAfterMs must exceed sendTimeoutMs, or live sends would be reclaimed');
  }
  return problems;
}
