import { HttpException } from '@nestjs/common';
import { InputRejectedError } from '../errors/input.errors';

/** Errors the business method itself threw (or rejected with): never taken for a pipe's refusal. */
const thrownByMethod = new WeakSet<object>();

function markThrownByMethod(error: unknown): void {
  if (typeof error === 'object' && error !== null) thrownByMethod.add(error);
}

/**
 * `method` with what it throws marked as its own, and its metadata (`@UsePipes()` and the rest)
 * copied, for Nest to wrap in its pipes: an `HttpException` the chain then throws and the method
 * did not is a refusal of the input before the method ran.
 */
export function markingMethodErrors<F extends (...args: any[]) => unknown>(method: F): F {
  const marking = function (this: unknown, ...args: unknown[]): unknown {
    try {
      const result = method.apply(this, args);
      if (result instanceof Promise) {
        return result.catch((error: unknown) => {
          markThrownByMethod(error);
          throw error;
        });
      }
      return result;
    } catch (error) {
      markThrownByMethod(error);
      throw error;
    }
  };
  for (const key of Reflect.getMetadataKeys(method)) Reflect.defineMetadata(key, Reflect.getMetadata(key, method), marking);
  Object.defineProperty(marking, 'name', { value: method.name });
  return marking as F;
}

/**
 * The error a failed stored delivery is settled with: a client error (4xx `HttpException`) that
 * the method's pipes threw before it ran becomes an `InputRejectedError` carrying the pipe's
 * messages, given up at once; with `retry`, a plain error with those messages, retried as before.
 * Anything else is left as it is.
 */
export function judgedPipeRejection(error: unknown, retry: boolean): unknown {
  if (!(error instanceof HttpException) || thrownByMethod.has(error)) return error;
  const status = error.getStatus();
  if (status < 400 || status >= 500) return error;
  const rejection = new InputRejectedError(status, reasonsOf(error), error);
  return retry ? new Error(rejection.message, { cause: error }) : rejection;
}

/** What an `HttpException` says: its response's `message` (one string or a ValidationPipe's list), else its own message. */
function reasonsOf(error: HttpException): string[] {
  const response = error.getResponse();
  const message = typeof response === 'object' && response !== null ? (response as { message?: unknown }).message : response;
  if (Array.isArray(message)) return message.map(String);
  return [typeof message === 'string' && message !== '' ? message : error.message];
}
