import { ROUTE_ARGS_METADATA } from '@nestjs/common/constants';
import type { ExternalContextCreator } from '@nestjs/core/helpers/external-context-creator';
import { golevelup } from '../transport/amqp/golevelup';
import { markingMethodErrors } from './pipe-rejection';

/** A handler as Nest runs it: guards, interceptors, pipes and parameter decorators, then the method. */
export type NestHandlerChain = (payload: unknown, message: unknown, headers: unknown) => Promise<unknown>;

/**
 * Builds the chain Nest runs for a RabbitMQ handler exactly as golevelup builds it at bootstrap:
 * the method bound to its provider, with the method's metadata copied onto the bound function
 * (the inbox interceptor, guards and pipes find theirs there), through the external context
 * creator with golevelup's parameter factory and its `rmq` context type.
 */
export function nestHandlerChain(
  contextCreator: ExternalContextCreator,
  instance: object,
  methodName: string,
  method: (...args: unknown[]) => unknown,
): NestHandlerChain {
  const { RABBIT_CONTEXT_TYPE_KEY, RabbitRpcParamsFactory } = golevelup();
  // What the method throws is told apart from what its pipes throw (see judgedPipeRejection).
  const bound = markingMethodErrors(method.bind(instance));
  for (const key of Reflect.getMetadataKeys(method)) Reflect.defineMetadata(key, Reflect.getMetadata(key, method), bound);
  return contextCreator.create(
    instance,
    bound,
    methodName,
    ROUTE_ARGS_METADATA,
    new RabbitRpcParamsFactory(),
    undefined,
    undefined,
    undefined,
    RABBIT_CONTEXT_TYPE_KEY,
  );
}
