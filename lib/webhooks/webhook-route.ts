import { PATH_METADATA } from '@nestjs/common/constants';

/**
 * What a request's path ends with when it is for this route: the controller's path and the
 * method's, route parameters matching one segment. Matched at the end, so that a global prefix or
 * a URI version in front does not hide it.
 */
export function webhookRoutePattern(controller: object, method: object): RegExp {
  const first = (paths: unknown) => (Array.isArray(paths) ? paths[0] : paths) as string | undefined;
  const segments = [first(Reflect.getMetadata(PATH_METADATA, controller)), first(Reflect.getMetadata(PATH_METADATA, method))]
    .flatMap((path) => (path ?? '').split('/'))
    .filter((segment) => segment !== '');
  const pattern = segments.map((segment) => (segment.startsWith(':') ? '[^/]+' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('/');
  return new RegExp(`(?:^|/)${pattern}/?$`);
}

/** Set on a request whose refusal the library logged itself, so that it is not logged twice. */
export const REFUSAL_LOGGED = Symbol('nestjs-outbox:refusal-logged');

/** Marks `request` (and the Node request under a Fastify one) as logged. */
export function markRefusalLogged(request: unknown): void {
  if (!request || typeof request !== 'object') return;
  (request as Record<symbol, boolean>)[REFUSAL_LOGGED] = true;
  const raw = (request as { raw?: unknown }).raw;
  if (raw && typeof raw === 'object') (raw as Record<symbol, boolean>)[REFUSAL_LOGGED] = true;
}
