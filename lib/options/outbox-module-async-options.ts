import type { InjectionToken, ModuleMetadata, OptionalFactoryDependency, Provider, Type } from '@nestjs/common';
import type { OutboxModuleOptionsInput } from './outbox-module-options';
import type { OutboxModuleStaticOptions } from './outbox-module-static-options';

/**
 * What an async factory (`useFactory`, or `create()` of `useClass` / `useExisting`) returns: the
 * runtime options only. The static options shape the module before any factory runs, so one of
 * them returned from a factory fails type-checking (and, untyped, the start-up).
 */
export type OutboxRuntimeOptions = OutboxModuleOptionsInput & { [K in keyof OutboxModuleStaticOptions]?: never };

/** A class giving the outbox's runtime options, for `forRootAsync({ useClass })` or `{ useExisting }`. */
export interface OutboxOptionsFactory {
  /** The runtime options (no static ones: those go next to `useClass` in `forRootAsync`). */
  create(): OutboxRuntimeOptions | Promise<OutboxRuntimeOptions>;
}

/**
 * `OutboxModule.forRootAsync()`'s argument: the static options (`name`, `dataSourceName`, table
 * names, transports…) given here directly, and the runtime options from exactly one of
 * `useFactory`, `useClass` or `useExisting`.
 */
export interface OutboxModuleAsyncOptions extends OutboxModuleStaticOptions, Pick<ModuleMetadata, 'imports'> {
  /** Providers `useFactory` is given, in order. */
  inject?: (InjectionToken | OptionalFactoryDependency)[];
  /** Returns the runtime options, from the injected providers. */
  useFactory?: (...args: any[]) => OutboxRuntimeOptions | Promise<OutboxRuntimeOptions>;
  /** A class Nest creates inside the module, whose `create()` returns the runtime options. */
  useClass?: Type<OutboxOptionsFactory>;
  /** A provider of the application (imported in `imports`) whose `create()` returns the runtime options. */
  useExisting?: Type<OutboxOptionsFactory>;
  /** Providers available to `useClass` / `useFactory` inside the module. */
  provideInjectionTokensFrom?: Provider[];
}
