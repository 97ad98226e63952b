/*
 * Type tests of OutboxModule.forRootAsync(), checked by `npm run typecheck` (never run): each
 * `@ts-expect-error` fails the type-check if the line under it compiles. The static options shape
 * the module before any factory runs, so an async factory may not return one.
 */
import { Injectable } from '@nestjs/common';
import { OutboxModule, OutboxOptionsFactory, OutboxRuntimeOptions } from '../../lib';

/** Runtime options from a factory: accepted. */
export const fromFactory = OutboxModule.forRootAsync({
  name: 'billing',
  tableName: 'billing_outbox',
  useFactory: () => ({ maxAttempts: 3, pollIntervalMs: 500 }),
});

/** A static option returned by the factory, as a literal. */
export const staticInFactory = OutboxModule.forRootAsync({
  // @ts-expect-error tableName is static: it goes next to useFactory, not in what it returns
  useFactory: () => ({ maxAttempts: 3, tableName: 'outbox_message' }),
});

const computed = { maxAttempts: 3, dataSourceName: 'billing' };
/** A static option returned by the factory in an object built beforehand. */
export const staticInComputedFactory = OutboxModule.forRootAsync({
  // @ts-expect-error dataSourceName is static: it goes next to useFactory, not in what it returns
  useFactory: () => computed,
});

/** A static option returned by an async factory. */
export const staticInAsyncFactory = OutboxModule.forRootAsync({
  // @ts-expect-error transport is static: it goes next to useFactory, not in what it returns
  useFactory: async () => ({ transport: class {} }),
});

/** Runtime options from a class: accepted. */
@Injectable()
export class RuntimeOptions implements OutboxOptionsFactory {
  create(): OutboxRuntimeOptions {
    return { maxAttempts: 3 };
  }
}

/** A static option returned by a class's create(). */
@Injectable()
export class StaticOptions implements OutboxOptionsFactory {
  // @ts-expect-error name is static: it goes next to useClass, not in what create() returns
  create() {
    return { name: 'billing' };
  }
}

export const fromClass = OutboxModule.forRootAsync({ useClass: RuntimeOptions });
export const fromExisting = OutboxModule.forRootAsync({ useExisting: RuntimeOptions });
// @ts-expect-error a class whose create() returns a static option
export const fromStaticClass = OutboxModule.forRootAsync({ useClass: StaticOptions });
