import type { DiscoveryService } from '@nestjs/core';
import { OutboxError } from '../errors';
import { OutboxIdentity } from './outbox-identity';
import { describeOutbox, namedOutbox, outboxNameProblem } from './outbox-name';

/**
 * The outboxes the application configures, by name (undefined: the default outbox), found as
 * the `OutboxIdentity` each `OutboxModule` provides. Two outboxes of one name fail start-up: their
 * tokens would be one, and one would silently serve both.
 */
export function configuredOutboxes(discovery: DiscoveryService): Set<string | undefined> {
  const names = new Set<string | undefined>();
  for (const wrapper of discovery.getProviders()) {
    if (wrapper.token !== OutboxIdentity) continue;
    const { name } = wrapper.instance as OutboxIdentity;
    if (name !== undefined && names.has(name))
      throw new OutboxError(`OutboxModule.forRoot() is imported twice with name ${JSON.stringify(name)}: give each outbox a name of its own`);
    names.add(name);
  }
  return names;
}

/**
 * The outbox a decorated handler's `outbox` option chooses (undefined: the default outbox), once
 * checked: a name that is not one, or an outbox the application does not configure, fails
 * start-up naming the handler (`where`) and the outbox.
 */
export function chosenOutbox(where: string, option: unknown, configured: ReadonlySet<string | undefined>): string | undefined {
  const problem = outboxNameProblem('outbox', option);
  if (problem) throw new OutboxError(`${where}: ${problem}`);
  const name = namedOutbox(option as string | undefined);
  if (!configured.has(name)) {
    const known = [...configured].map(describeOutbox).join(', ') || 'none';
    const fix =
      name === undefined
        ? 'give the handler an `outbox` option naming one of them'
        : `import OutboxModule.forRoot({ name: ${JSON.stringify(name)}, ... }), or name a configured outbox`;
    throw new OutboxError(`${where} uses ${describeOutbox(name)}, which the application does not configure (configured: ${known}); ${fix}`);
  }
  return name;
}
