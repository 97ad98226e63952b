import type { Type } from '@nestjs/common';
import type { OutboxTransport } from '../message/outbox-transport';
import type { OutboxModuleOptions } from './outbox-module-options';

/** The name of the transport when only `transport` (or nothing) is configured, and of rows from before transports had names. */
export const DEFAULT_TRANSPORT_NAME = 'default';

/**
 * A transport's name: stored in every row's varchar(100) `transport` column and used in log
 * lines and interval names, so plain ASCII (where a character is a byte) without spaces.
 */
const TRANSPORT_NAME = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$/;

/** One transport of `transports`, with the settings of its own dispatch lane. */
export interface OutboxLaneOptions {
  /** The class (Nest creates it) of the transport that sends this lane's messages. */
  transport: Type<OutboxTransport>;
  /** Rows claimed per batch in this lane. Default: the module's `batchSize`. */
  batchSize?: number;
  /** Batches this lane keeps in flight at once. Default: the module's `dispatchConcurrency`. */
  dispatchConcurrency?: number;
  /** This lane's polling interval. Default: the module's `pollIntervalMs`. */
  pollIntervalMs?: number;
}

/** A transport class, or one with its lane's settings. */
export type OutboxTransportEntry = Type<OutboxTransport> | OutboxLaneOptions;

/**
 * A configured lane: its transport's name and class, and the settings it overrides.
 * @inline
 */
export interface LaneSpec extends OutboxLaneOptions {
  /** The transport's name, as given in `transports` (or `default`). */
  name: string;
}

/** The lane settings that are checked like the module options of the same name. */
const LANE_LIMITS = {
  batchSize: { min: 1, max: 10_000 },
  dispatchConcurrency: { min: 1, max: 64 },
  pollIntervalMs: { min: 10, max: Number.MAX_SAFE_INTEGER },
} as const;

/** Whether `name` can name a transport; a message's `transport` is checked against the same rule. */
export function isTransportName(name: unknown): name is string {
  return typeof name === 'string' && TRANSPORT_NAME.test(name);
}

/** What a transport name must look like, for error messages. */
export const TRANSPORT_NAME_RULE = '1 to 100 ASCII letters, digits, ".", "_", ":" or "-", starting with a letter or digit';

/** The lanes `transport` / `transports` configure: one per transport, `default` (RabbitMQ) when neither is given. */
export function laneSpecs(
  statics: { transport?: Type<OutboxTransport>; transports?: Record<string, OutboxTransportEntry> },
  fallback: () => Type<OutboxTransport>,
): LaneSpec[] {
  if (statics.transports) {
    return Object.entries(statics.transports).map(([name, entry]) => (typeof entry === 'function' ? { name, transport: entry } : { ...entry, name }));
  }
  return [{ name: DEFAULT_TRANSPORT_NAME, transport: statics.transport ?? fallback() }];
}

/**
 * The transport that sends messages `publish()` was not told about and `route()` did not place:
 * `defaultTransport`, else the only one configured, else the one named `default`.
 */
export function defaultTransportName(defaultTransport: string | undefined, lanes: readonly LaneSpec[]): string {
  if (defaultTransport !== undefined) return defaultTransport;
  return lanes.length === 1 ? lanes[0].name : DEFAULT_TRANSPORT_NAME;
}

/**
 * Problems of `transports` and `defaultTransport`, checked where the module is declared.
 * `transportProblem` checks each class as the single `transport` option is checked.
 */
export function laneOptionProblems(
  statics: { transport?: unknown; transports?: unknown; defaultTransport?: unknown },
  transportProblem: (option: string, transport: unknown) => string | undefined,
): string[] {
  const problems: string[] = [];
  const { transports, defaultTransport } = statics;
  if (transports === undefined) {
    if (defaultTransport !== undefined && defaultTransport !== DEFAULT_TRANSPORT_NAME) {
      problems.push(
        `defaultTransport ${JSON.stringify(defaultTransport)} names no transport: without transports, the one transport is named "${DEFAULT_TRANSPORT_NAME}"`,
      );
    }
    return problems;
  }
  if (statics.transport !== undefined)
    problems.push('transport and transports are both set: name every transport in transports (e.g. transports: { default: ..., partner: ... })');
  if (transports === null || typeof transports !== 'object' || Array.isArray(transports)) {
    return [
      ...problems,
      'transports must be an object naming each transport: { name: TransportClass } or { name: { transport: TransportClass, batchSize, ... } }',
    ];
  }
  const names = Object.keys(transports);
  if (names.length === 0) problems.push('transports names no transport: give at least one, or leave it out for the default RabbitMQ transport');
  for (const [name, entry] of Object.entries(transports as Record<string, unknown>)) {
    if (!isTransportName(name)) problems.push(`transports: the name ${JSON.stringify(name)} is not a transport name (${TRANSPORT_NAME_RULE})`);
    // A plain object is a lane's settings; anything else is taken for a transport class.
    const isLane = entry !== null && typeof entry === 'object' && Object.getPrototypeOf(entry) === Object.prototype;
    const transportClass = isLane ? (entry as OutboxLaneOptions).transport : entry;
    const classProblem = transportProblem(`transports.${name}${isLane ? '.transport' : ''}`, transportClass);
    if (classProblem) problems.push(classProblem);
    if (isLane) problems.push(...laneSettingProblems(name, entry as Record<string, unknown>));
  }
  if (defaultTransport !== undefined && !(typeof defaultTransport === 'string' && names.includes(defaultTransport))) {
    problems.push(`defaultTransport ${JSON.stringify(defaultTransport)} is not one of transports (${names.join(', ')})`);
  }
  if (defaultTransport === undefined && names.length > 1 && !names.includes(DEFAULT_TRANSPORT_NAME)) {
    problems.push(
      `transports names ${names.length} transports and none is "${DEFAULT_TRANSPORT_NAME}": set defaultTransport to the one that sends messages published without a transport`,
    );
  }
  return problems;
}

function laneSettingProblems(name: string, lane: Record<string, unknown>): string[] {
  const problems: string[] = [];
  for (const key of Object.keys(lane)) {
    if (key === 'transport') continue;
    if (!(key in LANE_LIMITS)) {
      problems.push(`transports.${name}.${key} is not a lane setting (transport, ${Object.keys(LANE_LIMITS).join(', ')})`);
      continue;
    }
    const value = lane[key];
    const { min, max } = LANE_LIMITS[key as keyof typeof LANE_LIMITS];
    if (value !== undefined && !(Number.isInteger(value) && (value as number) >= min && (value as number) <= max)) {
      problems.push(`transports.${name}.${key} must be an integer from ${min}${max < Number.MAX_SAFE_INTEGER ? ` to ${max}` : ''}, got ${String(value)}`);
    }
  }
  return problems;
}

/**
 * What `OutboxModule.forRoot()` asks of a transport class beyond `send`: optionally, what is wrong
 * with its own settings given the module's options (a timeout longer than `sendTimeoutMs`), so
 * that a mistake fails where the module is declared.
 */
export interface OutboxTransportClass {
  optionProblems?(options: OutboxModuleOptions): string[];
}

/** The transport class's problems with the module's options, if it has a check. */
export function transportOptionProblems(transport: unknown, options: OutboxModuleOptions): string[] {
  const transportClass = transport as OutboxTransportClass | undefined;
  return typeof transportClass?.optionProblems === 'function' ? transportClass.optionProblems(options) : [];
}
