// How a page configures a Timeline: colors and texts of spans and lanes, sizes, callbacks.
import type { MemoryCurve, Spans } from '../result';
import type { TimeScale } from './time_scale';

export interface TimelineOptions {
  /** Color of a span kind ("forward", "all_reduce", ...). */
  color: (kind: string) => string;
  /** Short text drawn inside span i when it fits (e.g. "F3"); null for none. */
  label?: (spans: Spans, i: number) => string | null;
  /** Rows of the tooltip for span i: [key, value]. */
  tooltip?: (spans: Spans, i: number) => [string, string][];
  /** Stream lanes in this order inside each rank. */
  streamOrder?: string[];
  streamLabel?: (stream: string) => string;
  /** Pipeline stage of a rank (ranks are grouped by stage). */
  stageOf?: (rank: number) => number;
  rankLabel?: (rank: number) => string;
  /** Memory curves drawn under the spans, one track per device, against `capacityGiB`. */
  memory?: { curves: MemoryCurve[]; capacityGiB: number };
  laneHeight?: number;
  memoryHeight?: number;
  gutter?: number;
  /** Largest height of the widget in CSS pixels (taller content scrolls). */
  maxHeight?: number;
  /** Called after the visible window changes. */
  onScale?: (scale: TimeScale) => void;
  /** A second, quieter line under the rank label (e.g. "×1024": GPUs it stands for). */
  rankNote?: (rank: number) => string | null;
  /** Called when a span is selected (its index) or the selection is cleared (-1). */
  onSelect?: (i: number) => void;
  /** The time axis reaches at least this far (a shared axis for runs stacked in compare). */
  tMax?: number;
  /** Start in the compact compute-only view. */
  computeOnly?: boolean;
  /** Called when a time range is selected, or cleared (null). */
  onRange?: (range: { t0: number; t1: number } | null) => void;
}
