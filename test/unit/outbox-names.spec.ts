import { SELF_DECLARED_DEPS_METADATA } from '@nestjs/common/constants';
import { DEFAULT_OUTBOX_NAME, getOutboxServiceToken, InjectOutbox, OutboxModule, OutboxService } from '../../lib';
import {
  getInboxWorkerToken,
  getOutboxAdminToken,
  getOutboxDispatcherToken,
  getRetentionToken,
  getStuckDetectorToken,
  InjectOutboxAdmin,
  InboxWorker,
  OutboxAdmin,
  OutboxDispatcher,
  Retention,
  StuckDetector,
} from '../../lib/entries/admin';
import { getOutboxTransportsToken, getOutboxTransportToken, OUTBOX_TRANSPORT, OUTBOX_TRANSPORTS } from '../../lib/entries/transports';
import { OutboxIdentity } from '../../lib/naming/outbox-identity';
import { getWebhookIntakeToken } from '../../lib/webhooks/webhook-intake.service';
import { outboxNameProblem } from '../../lib/naming/outbox-name';
import { WebhookIntake } from '../../lib/webhooks/webhook-intake.service';
import { problemsThrownBy } from '../support/option-problems';

const forRootProblems = (options: Record<string, unknown>): string[] => problemsThrownBy(() => OutboxModule.forRoot(options));

describe('outbox tokens', () => {
  it('are the classes and symbols for the default outbox, with or without its name', () => {
    for (const name of [undefined, DEFAULT_OUTBOX_NAME]) {
      expect(getOutboxServiceToken(name)).toBe(OutboxService);
      expect(getOutboxAdminToken(name)).toBe(OutboxAdmin);
      expect(getOutboxDispatcherToken(name)).toBe(OutboxDispatcher);
      expect(getInboxWorkerToken(name)).toBe(InboxWorker);
      expect(getWebhookIntakeToken(name)).toBe(WebhookIntake);
      expect(getStuckDetectorToken(name)).toBe(StuckDetector);
      expect(getRetentionToken(name)).toBe(Retention);
      expect(getOutboxTransportToken(name)).toBe(OUTBOX_TRANSPORT);
      expect(getOutboxTransportsToken(name)).toBe(OUTBOX_TRANSPORTS);
    }
  });

  it("are tokens of a named outbox's own, one per service and per name", () => {
    const tokens = [getOutboxServiceToken, getOutboxAdminToken, getOutboxDispatcherToken, getInboxWorkerToken, getRetentionToken, getOutboxTransportToken];
    const billing = tokens.map((tokenOf) => tokenOf('billing'));
    const orders = tokens.map((tokenOf) => tokenOf('orders'));
    expect(new Set([...billing, ...orders]).size).toBe(tokens.length * 2);
    expect(getOutboxServiceToken('billing')).toBe(getOutboxServiceToken('billing'));
    expect(getOutboxServiceToken('billing')).not.toBe(OutboxService);
  });

  it('are what InjectOutbox() and InjectOutboxAdmin() inject', () => {
    class Consumer {
      constructor(
        readonly defaultOutbox: unknown,
        readonly billingOutbox: unknown,
        readonly billingAdmin: unknown,
      ) {}
    }
    InjectOutbox()(Consumer, undefined, 0);
    InjectOutbox('billing')(Consumer, undefined, 1);
    InjectOutboxAdmin('billing')(Consumer, undefined, 2);
    const declared = (Reflect.getMetadata(SELF_DECLARED_DEPS_METADATA, Consumer) as { index: number; param: unknown }[]).sort((a, b) => a.index - b.index);
    expect(declared.map((dependency) => dependency.param)).toEqual([OutboxService, getOutboxServiceToken('billing'), getOutboxAdminToken('billing')]);
  });
});

describe('outbox names', () => {
  it('accepts identifier-like names', () => {
    for (const name of ['billing', 'Orders_2', '_eu-west', 'a'.repeat(63)]) expect(outboxNameProblem('name', name)).toBeUndefined();
  });

  it('refuses what is not a name, naming the option', () => {
    for (const name of ['', ' billing', '2fast', 'billing.eu', 'a'.repeat(64), 42, null]) {
      expect(outboxNameProblem('name', name)).toMatch(/^name must be an outbox name/);
    }
  });

  it('fails OutboxModule.forRoot() on a bad name or transaction connection name, naming the option', () => {
    expect(forRootProblems({ name: '' })).toEqual([expect.stringMatching(/^name must be an outbox name.*got the string ""/)]);
    expect(forRootProblems({ name: 'bill ing' })).toEqual([expect.stringMatching(/^name must be/)]);
    expect(forRootProblems({ transactionConnectionName: '' })).toEqual([expect.stringMatching(/^transactionConnectionName must be/)]);
    expect(() => OutboxModule.forRoot({ name: 'billing', transactionConnectionName: 'billing', dataSourceName: 'billing' })).not.toThrow();
  });

  it('keeps the default outbox scheduler names and log contexts, and scopes a named one', () => {
    const unnamed = new OutboxIdentity(undefined);
    const billing = new OutboxIdentity('billing');
    expect(unnamed.scheduleName('nestjs-outbox:retention')).toBe('nestjs-outbox:retention');
    expect(billing.scheduleName('nestjs-outbox:retention')).toBe('nestjs-outbox:billing:retention');
    expect(billing.scheduleName('nestjs-outbox:dispatch:default')).toBe('nestjs-outbox:billing:dispatch:default');
    expect(unnamed.logContext('StuckDetector')).toBe('StuckDetector');
    expect(billing.logContext('StuckDetector')).toBe('StuckDetector[billing]');
  });
});
