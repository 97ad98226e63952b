import { OutboxModuleOptions } from '../../lib';
import { validateOutboxOptions } from '../../lib/options/validate-options';
import { assertTableName } from '../../lib/naming/table-names';
import { optionProblems } from '../support/option-problems';

describe('validateOutboxOptions', () => {
  it('fills every default', () => {
    const options = validateOutboxOptions(undefined);
    expect(options).toBeInstanceOf(OutboxModuleOptions);
    expect(options).toMatchObject({ batchSize: 500, maxAttempts: 10, pollIntervalMs: 1_000, dispatcherEnabled: true, mandatory: true });
  });

  it('keeps given values and functions', () => {
    const isFatalError = () => true;
    expect(validateOutboxOptions({ batchSize: 10, isFatalError })).toMatchObject({ batchSize: 10, isFatalError });
  });

  it('accepts the options that have no default', () => {
    const isFatalError = () => false;
    expect(validateOutboxOptions({ workerPoolSize: 0, instanceId: 'billing-1', isFatalError })).toMatchObject({
      workerPoolSize: 0,
      instanceId: 'billing-1',
      isFatalError,
    });
    expect(optionProblems({ workerPoolSize: -1 })).toEqual([expect.stringMatching(/^workerPoolSize/)]);
  });

  it('names the option and the reason for a bad value', () => {
    expect(optionProblems({ batchSize: 0 })).toEqual([expect.stringMatching(/^batchSize must not be less than 1/)]);
    expect(optionProblems({ pollIntervalMs: 'fast' })).toEqual(expect.arrayContaining([expect.stringMatching(/^pollIntervalMs/)]));
    expect(optionProblems({ backoffJitter: 2 })).toEqual([expect.stringMatching(/^backoffJitter/)]);
    expect(optionProblems({ notifyChannel: 'x; DROP TABLE y' })).toEqual([expect.stringMatching(/^notifyChannel/)]);
    expect(optionProblems({ isFatalError: 'yes' })).toEqual(['isFatalError must be a function']);
  });

  it('bounds maxPayloadBytes by RabbitMQ’s default message size, 1 MiB by default', () => {
    expect(validateOutboxOptions(undefined).maxPayloadBytes).toBe(1_048_576);
    expect(validateOutboxOptions({ maxPayloadBytes: 134_217_728 }).maxPayloadBytes).toBe(134_217_728);
    expect(optionProblems({ maxPayloadBytes: 0 })).toEqual([expect.stringMatching(/^maxPayloadBytes must not be less than 1/)]);
    expect(optionProblems({ maxPayloadBytes: 134_217_729 })).toEqual([expect.stringMatching(/^maxPayloadBytes must not be greater than 134217728/)]);
  });

  it('reports every bad option at once, and unknown ones by name', () => {
    const problems = optionProblems({ batchSize: -1, maxAttempts: 0, batchsize: 5 });
    expect(problems).toEqual(
      expect.arrayContaining([expect.stringMatching(/^batchSize/), expect.stringMatching(/^maxAttempts/), 'batchsize is not an OutboxModule option']),
    );
  });

  it('rejects combinations that would reclaim live sends or invert the backoff', () => {
    expect(optionProblems({ sendTimeoutMs: 5_000, stuckReclaimAfterMs: 5_000, stuckWarnAfterMs: 1_000 })).toEqual([
      expect.stringMatching(/^stuckReclaimAfterMs must exceed sendTimeoutMs/),
    ]);
    expect(optionProblems({ backoffBaseMs: 10_000, backoffMaxMs: 1_000 })).toEqual(['backoffMaxMs must be at least backoffBaseMs']);
    expect(optionProblems({ stuckWarnAfterMs: 600_000 })).toEqual(['stuckWarnAfterMs must not exceed stuckReclaimAfterMs']);
  });

  it('puts the option names in the error message', () => {
    expect(() => validateOutboxOptions({ batchSize: 0 })).toThrow(/Invalid OutboxModule options: batchSize/);
  });
});

describe('assertTableName', () => {
  it('accepts plain identifiers', () => {
    expect(assertTableName('tableName', 'my_outbox_2')).toBe('my_outbox_2');
  });

  it.each(['', 'outbox; DROP TABLE users', 'public.outbox', '"quoted"', '1starts_with_digit', 'x'.repeat(64)])('rejects %p naming the option', (name) => {
    expect(() => assertTableName('tableName', name)).toThrow(/tableName must be a plain SQL identifier/);
  });
});
