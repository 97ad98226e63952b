import type { MetadataScanner } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper';

/** A method that carries a decorator's options, on the class Nest holds in `wrapper`. */
export interface DecoratedMethod<TOptions> {
  wrapper: InstanceWrapper;
  methodName: string;
  method: (...args: unknown[]) => unknown;
  options: TOptions;
}

/** The methods of these providers or controllers whose metadata under `key` a decorator set. */
export function* decoratedMethods<TOptions>(wrappers: InstanceWrapper[], scanner: MetadataScanner, key: symbol): Generator<DecoratedMethod<TOptions>> {
  for (const wrapper of wrappers) {
    const prototype = wrapper.metatype?.prototype as Record<string, unknown> | undefined;
    if (!prototype || typeof wrapper.metatype !== 'function') continue;
    for (const methodName of scanner.getAllMethodNames(prototype)) {
      const method = prototype[methodName] as (...args: unknown[]) => unknown;
      const options = Reflect.getMetadata(key, method) as TOptions | undefined;
      if (options) yield { wrapper, methodName, method, options };
    }
  }
}
