/** A time chart (uPlot: small, fast on many points, canvas-drawn). */
import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";

const COLOURS = ["#1f6feb", "#d1242f", "#1a7f37", "#9a6700", "#8250df", "#bf3989"];

export interface ChartProps {
  /** Seconds since the epoch. */
  times: number[];
  series: { label: string; values: (number | null)[] }[];
  height?: number;
  label: string;
}

export function TimeChart({ times, series, height = 240, label }: ChartProps) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const plot = new uPlot(
      {
        width: Math.max(300, el.clientWidth),
        height,
        series: [
          {},
          ...series.map((s, i) => ({ label: s.label, stroke: COLOURS[i % COLOURS.length], width: 2, spanGaps: true })),
        ],
        axes: [{}, {}],
        legend: { show: true },
      },
      [times, ...series.map((s) => s.values)] as uPlot.AlignedData,
      el,
    );
    const resize = (): void => plot.setSize({ width: Math.max(300, el.clientWidth), height });
    window.addEventListener("resize", resize);
    return () => {
      window.removeEventListener("resize", resize);
      plot.destroy();
    };
  }, [times, series, height]);
  return <div class="chart" ref={box} role="img" aria-label={label} data-points={times.length} />;
}
