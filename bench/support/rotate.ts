/**
 * `items` started `by` places further on: the order of run `by` when variants take turns, so
 * that drift on a shared machine (and the checkpoints one variant's writes cause) falls on each
 * variant alike.
 */
export function rotate<T>(items: readonly T[], by: number): T[] {
  const start = by % items.length;
  return [...items.slice(start), ...items.slice(0, start)];
}
