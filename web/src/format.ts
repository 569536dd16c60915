// Number formatting for the page: durations, rates, bytes and fractions, always with units.

/** Three significant digits, without exponent notation for the ranges the page shows. */
export function sig3(x: number): string {
  if (!Number.isFinite(x)) return '–';
  if (x === 0) return '0';
  const a = Math.abs(Number(x.toPrecision(3)));
  const digits = a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : Math.min(6, 2 - Math.floor(Math.log10(a)));
  return Number(x.toPrecision(3)).toFixed(digits);
}

/** A duration in seconds with the unit that keeps 1–999: "1.23 s", "45.6 ms", "12.0 µs", "800 ns". */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds)) return '–';
  const a = Math.abs(seconds);
  if (a === 0) return '0 s';
  if (a >= 60 * 60) return `${sig3(seconds / 3600)} h`;
  if (a >= 100 * 60) return `${sig3(seconds / 60)} min`;
  if (a >= 1) return `${sig3(seconds)} s`;
  if (a >= 1e-3) return `${sig3(seconds * 1e3)} ms`;
  if (a >= 1e-6) return `${sig3(seconds * 1e6)} µs`;
  return `${sig3(seconds * 1e9)} ns`;
}

const SI = [
  { v: 1e12, p: 'T' },
  { v: 1e9, p: 'G' },
  { v: 1e6, p: 'M' },
  { v: 1e3, p: 'k' },
];

/** A count with an SI prefix: 1234 -> "1.23k", 5.6e6 -> "5.60M". */
export function formatSI(x: number): string {
  if (!Number.isFinite(x)) return '–';
  const a = Math.abs(x);
  for (const { v, p } of SI) if (a >= v * 0.9995) return `${sig3(x / v)}${p}`;
  return sig3(x);
}

/** A fraction 0..1 as a percentage: 0.4567 -> "45.7%". */
export function formatPercent(fraction: number): string {
  if (!Number.isFinite(fraction)) return '–';
  const p = fraction * 100;
  return `${Math.abs(p) >= 10 ? p.toFixed(1) : p.toFixed(p === 0 ? 0 : 1)}%`;
}

/** Memory in GiB: "12.3 GiB", "0.52 GiB", "1.20 TiB". */
export function formatGiB(gib: number): string {
  if (!Number.isFinite(gib)) return '–';
  if (Math.abs(gib) >= 1024) return `${sig3(gib / 1024)} TiB`;
  if (Math.abs(gib) < 0.01 && gib !== 0) return `${sig3(gib * 1024)} MiB`;
  return `${sig3(gib)} GiB`;
}

/** A plain integer with thin separators: 1234567 -> "1 234 567". */
export function formatInt(x: number): string {
  if (!Number.isFinite(x)) return '–';
  return Math.round(x)
    .toString()
    .replace(/\B(?=(\d{3})+(?!\d))/g, '\u2009');
}
