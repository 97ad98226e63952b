/*
 * The part of @nestjs/config's API the documentation's examples use, as it declares it, so that
 * those examples type-check here without the package (not a dependency of the library).
 */
import { DynamicModule, Module } from '@nestjs/common';

/** `@nestjs/config`'s ConfigService: values of the environment (and config files) by key. */
export declare class ConfigService {
  get<T = any>(propertyPath: string): T | undefined;
  get<T = any>(propertyPath: string, defaultValue: NoInfer<T>): T;
  getOrThrow<T = any>(propertyPath: string): Exclude<T, undefined>;
}

/** `@nestjs/config`'s ConfigModule. */
@Module({})
export class ConfigModule {
  static forRoot(options?: { isGlobal?: boolean }): DynamicModule {
    return { module: ConfigModule, global: options?.isGlobal };
  }
}
