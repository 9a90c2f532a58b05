/**
 * A time chart drawn by uPlot (bundled: nothing loaded from elsewhere), in a figure with its
 * caption and, under a disclosure, the same figures as a table: readable without a mouse, by a
 * screen reader, and by the browser test. The chart follows its container's width.
 */
import uPlot from "uplot";
import { h, replace, table } from "./dom.js";

export interface ChartSeries {
  label: string;
  values: (number | null)[];
}

const COLORS = ["#2563eb", "#dc2626", "#059669", "#d97706", "#7c3aed"];

export interface TimeChart {
  element: HTMLElement;
  /** New figures (x: epoch seconds), drawn at once. */
  update(x: number[], series: ChartSeries[]): void;
  destroy(): void;
}

export function timeChart(
  caption: string,
  options: {
    days?: boolean;
    format?: (value: number) => string;
    /** How the y axis labels its ticks; unset: uPlot's own numbers. */
    axisFormat?: (value: number) => string;
    /** Seconds of the x axis, ending now (a live chart); unset: the data's range. */
    windowSeconds?: number;
  } = {},
): TimeChart {
  const plotArea = h("div", { class: "chart-plot", role: "img", "aria-label": caption });
  const figures = h("div", { class: "chart-figures" });
  const element = h(
    "figure",
    { class: "chart" },
    h("figcaption", null, caption),
    plotArea,
    h("details", null, h("summary", null, "Figures"), figures),
  );
  let plot: uPlot | undefined;
  let labels = "";
  const format = options.format ?? ((value: number) => String(Math.round(value * 1000) / 1000));
  const width = () => Math.max(260, plotArea.clientWidth || element.clientWidth || 600);
  const onResize = () => plot?.setSize({ width: width(), height: 220 });
  window.addEventListener("resize", onResize);

  return {
    element,
    update(x, series) {
      const key = series.map((s) => s.label).join("\u0000");
      const data: uPlot.AlignedData = [x, ...series.map((s) => s.values)];
      if (!plot || key !== labels) {
        plot?.destroy();
        labels = key;
        plot = new uPlot(
          {
            width: width(),
            height: 220,
            scales: {
              x: {
                time: true,
                ...(options.windowSeconds
                  ? {
                      // The last windowSeconds up to now, however few samples there are yet.
                      range: (): uPlot.Range.MinMax => {
                        const end = Date.now() / 1000 + 5;
                        return [end - options.windowSeconds!, end];
                      },
                    }
                  : {}),
              },
              y: {
                range: (_u: uPlot, _min: number, max: number): uPlot.Range.MinMax => [
                  0,
                  Math.max(1, max * 1.1),
                ],
              },
            },
            axes: [
              {},
              options.axisFormat
                ? { values: (_u, ticks) => ticks.map((tick) => options.axisFormat!(tick)), size: 70 }
                : {},
            ],
            series: [
              { label: options.days ? "Day" : "Time" },
              ...series.map((s, index) => ({
                label: s.label,
                stroke: COLORS[index % COLORS.length],
                width: 2,
                points: { show: x.length < 60 },
                value: (_u: uPlot, value: number | null) => (value === null ? "-" : format(value)),
              })),
            ],
          },
          data,
          plotArea,
        );
      } else plot.setData(data);
      const stamp = (t: number) => {
        const date = new Date(t * 1000);
        return options.days ? date.toISOString().slice(0, 10) : date.toLocaleTimeString();
      };
      replace(
        figures,
        table(
          [options.days ? "Day (UTC)" : "Time", ...series.map((s) => s.label)],
          x.map((t, row) => [
            stamp(t),
            ...series.map((s) => (s.values[row] === null ? "-" : format(s.values[row] as number))),
          ]),
          "No figures yet.",
        ),
      );
    },
    destroy() {
      window.removeEventListener("resize", onResize);
      plot?.destroy();
    },
  };
}
