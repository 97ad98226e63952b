/** Median and spread (min–max) of repeated measurements. */
export interface Summary {
  median: number;
  min: number;
  max: number;
}

export function summarise(values: number[]): Summary {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  const median = sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
  return { median, min: sorted[0], max: sorted[sorted.length - 1] };
}

export const formatRate = (s: Summary) => `${Math.round(s.median).toLocaleString('en-US')} (${Math.round(s.min)}–${Math.round(s.max)})`;
