import type { Type } from '@nestjs/common';

/**
 * The name of the unnamed outbox, as `@nestjs/typeorm` names its default DataSource: giving it
 * (`name: 'default'`, `@InboxHandler({ outbox: 'default' })`, `getOutboxServiceToken('default')`)
 * is the same as giving no name.
 */
export const DEFAULT_OUTBOX_NAME = 'default';

/** What an outbox name may be: it becomes part of injection tokens, scheduler names, metric attributes and log contexts. */
const OUTBOX_NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,62}$/;

/** Why `value`, given as `option`, is not an outbox name; undefined when it is one (or absent). */
export function outboxNameProblem(option: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'string' && OUTBOX_NAME.test(value)) return undefined;
  const shown = typeof value === 'string' ? `the string ${JSON.stringify(value)}` : value === null ? 'null' : `${typeof value} ${String(value)}`;
  return `${option} must be an outbox name: a letter or underscore, then letters, digits, '_' or '-', at most 63 characters; got ${shown}`;
}

/** The outbox `name` designates: a name of its own, or undefined for the default outbox (no name, or `'default'`). */
export function namedOutbox(name: string | undefined): string | undefined {
  return name === undefined || name === DEFAULT_OUTBOX_NAME ? undefined : name;
}

/** How messages speak of an outbox: `the outbox "billing"`, or `the default outbox`. */
export function describeOutbox(name: string | undefined): string {
  return name === undefined ? 'the default outbox' : `the outbox ${JSON.stringify(name)}`;
}

/** An injection token of an outbox's service: its class (or symbol) for the default outbox, a string of its own for a named one. */
export type OutboxToken<T> = Type<T> | symbol | string;

/** The token of what `defaultToken` is in the outbox `name`, as `getDataSourceToken(name)` is in `@nestjs/typeorm`. */
export function outboxToken<T>(defaultToken: Type<T> | symbol, kind: string, name: string | undefined): OutboxToken<T> {
  const named = namedOutbox(name);
  return named === undefined ? defaultToken : `nestjs-outbox:${named}:${kind}`;
}
