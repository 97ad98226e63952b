import { quickStartBlocks } from '../support/readme-quick-start';
import { typeErrorsOf } from '../support/type-check-snippets';

/**
 * The README's quick start is what a newcomer copies first, so it must compile against the
 * library as it is. Each block to check follows a marker naming its file,
 * `<!-- quick-start: app.module.ts -->`; the blocks import each other by those names and import
 * the library as `nestjs-outbox`, which is mapped to lib/index.ts here.
 */

describe('README quick start', () => {
  const blocks = quickStartBlocks();

  it('marks the outbox and the inbox examples for checking', () => {
    const files = blocks.map((block) => block.file);
    expect(new Set(files).size).toBe(files.length);
    expect(blocks.some((block) => block.code.includes('this.outbox.publish('))).toBe(true);
    expect(blocks.some((block) => block.code.includes('@InboxHandler('))).toBe(true);
  });

  it('type-checks against the library', () => {
    expect(typeErrorsOf(blocks, { 'nestjs-outbox': ['lib/index.ts'] }, '.quick-start-')).toBe('');
  }, 180_000);
});
