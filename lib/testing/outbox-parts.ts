import type { INestApplicationContext } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import type { InjectionToken } from '@nestjs/common';
import { OutboxError } from '../errors';
import { OutboxIdentity } from '../naming/outbox-identity';
import { describeOutbox } from '../naming/outbox-name';

/**
 * A provider of the `OutboxModule` of the outbox `name` (undefined: the default outbox), by the
 * token it has inside that module: with several outboxes, `app.get(token, { strict: false })`
 * could answer with another outbox's.
 */
export function outboxPart<T>(app: INestApplicationContext, name: string | undefined, token: InjectionToken): T {
  const discovery = app.get(DiscoveryService, { strict: false });
  const identity = discovery
    .getProviders()
    .find((wrapper) => wrapper.token === OutboxIdentity && (wrapper.instance as OutboxIdentity | undefined)?.name === name);
  if (!identity?.host)
    throw new OutboxError(
      `The application configures no ${describeOutbox(name).replace(/^the /, '')}: import OutboxModule.forRoot(${name === undefined ? '' : `{ name: ${JSON.stringify(name)}, ... }`})`,
    );
  return identity.host.getProviderByKey(token).instance as T;
}
