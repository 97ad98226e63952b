import { docExamples } from '../support/doc-examples';
import { typeErrorsOf } from '../support/type-check-snippets';

/**
 * The examples of the documentation that are marked `<!-- compiled: file.ts -->` compile against
 * the library as it is (imported as `nestjs-outbox`), with `@nestjs/config` as it declares itself.
 */

describe.each(['docs/configuration.md'])('the compiled examples of %s', (doc) => {
  const examples = docExamples(doc);

  it('are there, one file each', () => {
    const files = examples.map((example) => example.file);
    expect(files.length).toBeGreaterThan(0);
    expect(new Set(files).size).toBe(files.length);
  });

  it('type-check against the library', () => {
    const paths = {
      'nestjs-outbox': ['lib/index.ts'],
      'nestjs-outbox/admin': ['lib/entries/admin.ts'],
      'nestjs-outbox/transports': ['lib/entries/transports.ts'],
      'nestjs-outbox/webhooks': ['lib/entries/webhooks.ts'],
      'nestjs-outbox/*': ['lib/*/index.ts'],
      '@nestjs/config': ['test/support/stubs/nestjs-config.ts'],
    };
    expect(typeErrorsOf(examples, paths, '.doc-examples-')).toBe('');
  }, 180_000);
});
