// A fraction field of the config (0.91) shown and typed as a percentage (91%). 100% is the
// core's default and leaves the field unset: no override is written and share links stay short.

/** Percentages shown keep this many decimals: 0.91 × 100 is 91.00000000000001 in binary. */
const PERCENT_DECIMALS = 6;

/** The percentage a fraction is shown as (0.91 -> 91). */
export function fractionToPercent(fraction: number): number {
  const scale = 10 ** PERCENT_DECIMALS;
  return Math.round(fraction * 100 * scale) / scale;
}

/** The fraction a typed percentage writes (91 -> 0.91); 100 and no number (an empty field)
 * write nothing (undefined). Out-of-range values are written as typed: the core's validation
 * names the field and the page shows its message on the control. */
export function percentToFraction(percent: number | undefined): number | undefined {
  if (percent === undefined || !Number.isFinite(percent) || percent === 100) return undefined;
  // p / 100 is the double nearest to the decimal fraction ("91" -> 0.91, as JSON reads it).
  return percent / 100;
}
