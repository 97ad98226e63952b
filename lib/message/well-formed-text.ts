/**
 * `String.prototype.isWellFormed` and `toWellFormed` (ES2024, in every Node the library supports),
 * not yet in the compiler's ES2022 library. A string is well-formed when it has no lone surrogate
 * (an unpaired half of \uD800–\uDFFF), which has no UTF-8 form: the drivers and amqplib write
 * U+FFFD in its place.
 */
type WellFormed = { isWellFormed(): boolean; toWellFormed(): string };

export function isWellFormed(text: string): boolean {
  return (text as unknown as WellFormed).isWellFormed();
}

/** `text` with every lone surrogate replaced by U+FFFD. */
export function toWellFormed(text: string): string {
  return (text as unknown as WellFormed).toWellFormed();
}
