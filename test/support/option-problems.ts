import { OutboxOptionsError } from '../../lib';
import { validateOutboxOptions } from '../../lib/options/validate-options';

/**
 * The problems an `OutboxOptionsError` thrown by `configure` lists; fails the test when it throws
 * something else, or nothing.
 */
export function problemsThrownBy(configure: () => unknown): string[] {
  try {
    configure();
  } catch (error) {
    expect(error).toBeInstanceOf(OutboxOptionsError);
    return (error as OutboxOptionsError).problems;
  }
  throw new Error('expected the options to be rejected');
}

/** The problems `validateOutboxOptions` finds in `input` (the runtime options). */
export function optionProblems(input: unknown): string[] {
  return problemsThrownBy(() => validateOutboxOptions(input as never));
}
