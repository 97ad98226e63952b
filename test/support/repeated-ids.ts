/** The ids that stand in `ids` more than once, each repeat listed (an id seen three times, twice). */
export function duplicatesOf(ids: string[]): string[] {
  const seen = new Set<string>();
  return ids.filter((id) => seen.has(id) || !seen.add(id));
}
