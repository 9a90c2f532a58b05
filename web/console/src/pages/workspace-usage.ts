/** A workspace's usage per UTC day over the last 30 days: CPU-seconds, sessions, bytes; CSV download. */
import { timeChart } from "../chart.js";
import { usageCsv } from "../csv.js";
import { button, bytes, h, replace } from "../dom.js";
import type { PageContext } from "../page.js";

const DAYS = 30;

export async function usageTab(
  { api, onLeave }: PageContext,
  workspace: string,
  area: HTMLElement,
): Promise<void> {
  const todayUtc = new Date(`${new Date().toISOString().slice(0, 10)}T00:00:00Z`);
  const since = new Date(todayUtc.getTime() - (DAYS - 1) * 86_400_000);
  const report = await api.usage(workspace, "day", since);
  const x = report.buckets.map((bucket) => Date.parse(bucket.start) / 1000);
  const cpu = timeChart("CPU-seconds per day", { days: true, format: (v) => v.toFixed(1) });
  const sessions = timeChart("Sessions per day", { days: true, format: (v) => String(Math.round(v)) });
  const traffic = timeChart("File bytes per day", { days: true, format: bytes, axisFormat: bytes });
  onLeave(() => {
    cpu.destroy();
    sessions.destroy();
    traffic.destroy();
  });
  const download = button("Download CSV", () => {
    const url = URL.createObjectURL(new Blob([usageCsv(report)], { type: "text/csv" }));
    const link = h("a", {
      href: url,
      download: `sandpool-usage-${workspace}-${report.since.slice(0, 10)}.csv`,
    });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  });
  const t = report.totals;
  replace(
    area,
    h("h2", null, `Usage, last ${DAYS} days (UTC)`),
    h(
      "p",
      { class: "help" },
      `${t.sessions} sessions, ${t.execCalls} exec calls, ${t.cpuSeconds.toFixed(1)} CPU-s, ${bytes(t.bytesIn)} in, ${bytes(t.bytesOut)} out, ${t.denied} refused.`,
    ),
    h("div", { class: "actions" }, download),
    t.sessions + t.execCalls + t.denied === 0
      ? h(
          "p",
          { class: "empty" },
          "No usage in these 30 days: the charts fill as the workspace's sessions run code.",
        )
      : null,
    h("div", { class: "charts" }, cpu.element, sessions.element, traffic.element),
  );
  cpu.update(x, [{ label: "CPU-s", values: report.buckets.map((bucket) => bucket.cpuSeconds) }]);
  sessions.update(x, [{ label: "Sessions", values: report.buckets.map((bucket) => bucket.sessions) }]);
  traffic.update(x, [
    { label: "Bytes in", values: report.buckets.map((bucket) => bucket.bytesIn) },
    { label: "Bytes out", values: report.buckets.map((bucket) => bucket.bytesOut) },
  ]);
}
