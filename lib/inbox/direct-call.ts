import { INTERCEPTORS_METADATA, ROUTE_ARGS_METADATA } from '@nestjs/common/constants';
import { isObservable, lastValueFrom } from 'rxjs';
import { InboxInterceptor } from './inbox.interceptor';
import type { HandlerMethod } from './inbox-handler-options';

/**
 * Whether Nest would run nothing between the inbox interceptor and the business method, so that
 * the interceptor may call the method itself instead of through `next.handle()`, whose rxjs
 * plumbing and two `AsyncResource.bind()` calls cost tens of µs of CPU per delivery:
 * - no parameter decorators: Nest applies pipes, global ones included, only to decorated
 *   parameters, and otherwise passes golevelup's arguments on as they came;
 * - no method interceptor listed after the inbox's: global and class interceptors run before
 *   method ones, and method ones in list order (decorators apply bottom-up, so one written
 *   above `@InboxHandler()` is listed after it and runs inside it).
 */
export function runsMethodAlone(classRef: object, methodName: string, method: object): boolean {
  const parameters = Reflect.getMetadata(ROUTE_ARGS_METADATA, classRef, methodName) as object | undefined;
  if (parameters && Object.keys(parameters).length > 0) return false;
  const interceptors = (Reflect.getMetadata(INTERCEPTORS_METADATA, method) ?? []) as unknown[];
  return interceptors[interceptors.length - 1] === InboxInterceptor;
}

/**
 * Calls the method as the last step of Nest's chain does, `method.apply(instance, args)`, and
 * settles as that chain would: with the returned promise, or once a returned Observable completes.
 */
export async function callAsNest(method: HandlerMethod, instance: unknown, args: unknown[]): Promise<unknown> {
  const result = await method.apply(instance, args);
  return isObservable(result) ? lastValueFrom(result, { defaultValue: undefined }) : result;
}
