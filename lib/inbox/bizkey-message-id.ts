import { createHash } from 'node:crypto';

/**
 * The message id of a delivery that came without one and is deduped by `(type, bizKey)`: a hash
 * of both, so that no two facts share it however their text runs together (`order:paid` + `42`
 * and `order` + `paid:42`), and it fits the column whatever their length.
 */
export function bizKeyMessageId(type: string, bizKey: string): string {
  return `bizkey:${createHash('sha256')
    .update(JSON.stringify([type, bizKey]))
    .digest('hex')}`;
}
