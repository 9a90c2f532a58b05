/**
 * Overview: the pools (warm, leased, parked, starting, hibernated sessions, start rate), the
 * sessions in flight, calls per second with the share refused over the last hour, and server
 * errors (5xx answers, sandbox failures) per minute over the last hour. It polls the admin
 * API: pools and sessions every 5 seconds (drawn live), the last hour's usage reports every 30
 * (one per workspace known, at most MAX_WORKSPACES). The server errors come with the pools
 * list and are the answering replica's own (the admin API counts them in memory per replica):
 * behind a load balancer, each poll may show another replica's, so the chart says whose.
 */
import type { AdminApi, AnswerMinute, Pool, SessionInfo } from "../api.js";
import { timeChart } from "../chart.js";
import { h, replace, table, when } from "../dom.js";
import { type PageContext, workspaceHref } from "../page.js";

const POLL_MS = 5_000;
const USAGE_EVERY = 6; // polls: every 30 s
const MAX_SAMPLES = 720; // an hour of 5 s samples
const MAX_WORKSPACES = 25;

interface HourFigures {
  callsPerSecond: number;
  refusedPercent: number;
  workspaces: number;
  more: boolean;
}

export async function overviewPage({ api, main, onLeave, failed }: PageContext): Promise<void> {
  const cards = h("div", { class: "cards" });
  const pools = h("section", { "aria-labelledby": "pools-heading" });
  const live = timeChart("In flight now (sampled every 5 s while this page is open)", {
    format: (value) => String(Math.round(value)),
    windowSeconds: 3600,
  });
  const hour = timeChart("Last hour: exec calls per second and refused calls (%)", {
    format: (value) => (Math.round(value * 100) / 100).toString(),
    windowSeconds: 3600,
  });
  const errors = timeChart("Last hour, the answering replica: contract calls and server errors per minute", {
    format: (value) => String(Math.round(value)),
    windowSeconds: 3600,
  });
  const updated = h("p", { class: "help", "aria-live": "off" });
  replace(
    main,
    h("h1", { tabindex: "-1" }, "Overview"),
    updated,
    cards,
    pools,
    h("section", { class: "charts" }, live.element, hour.element, errors.element),
  );

  const x: number[] = [];
  const sessions: number[] = [];
  const calls: number[] = [];
  const rateX: number[] = [];
  const rates: number[] = [];
  const refused: number[] = [];
  let last: HourFigures | undefined;
  let tick = 0;
  let stopped = false;

  const refresh = async () => {
    const [{ items: poolList, serverErrors }, sessionList] = await Promise.all([api.pools(), api.sessions()]);
    if (tick % USAGE_EVERY === 0) last = await lastHour(api, sessionList);
    tick += 1;
    if (stopped) return;
    const now = Date.now() / 1000;
    const running = sessionList.filter((session) => session.state === "running");
    x.push(now);
    sessions.push(running.length);
    calls.push(sessionList.reduce((sum, session) => sum + session.activeCalls, 0));
    if (last) {
      rateX.push(now);
      rates.push(last.callsPerSecond);
      refused.push(last.refusedPercent);
    }
    for (const series of [x, sessions, calls]) if (series.length > MAX_SAMPLES) series.shift();
    for (const series of [rateX, rates, refused]) if (series.length > MAX_SAMPLES) series.shift();
    drawCards(cards, sessionList, last, serverErrors.minutes);
    drawPools(pools, poolList, sessionList);
    live.update(x, [
      { label: "Sessions running", values: sessions },
      { label: "Calls in flight", values: calls },
    ]);
    hour.update(rateX, [
      { label: "Exec calls/s", values: rates },
      { label: "Refused %", values: refused },
    ]);
    errors.update(
      serverErrors.minutes.map((minute) => Date.parse(minute.start) / 1000),
      [
        { label: "Calls", values: serverErrors.minutes.map((minute) => minute.calls) },
        { label: "Server errors (5xx)", values: serverErrors.minutes.map((minute) => minute.serverErrors) },
        { label: "Sandbox failures", values: serverErrors.minutes.map((minute) => minute.sandboxErrors) },
      ],
    );
    updated.textContent = `Updated ${new Date().toLocaleTimeString()}; refreshed every 5 seconds.`;
  };

  let timer: ReturnType<typeof setTimeout> | undefined;
  const loop = async () => {
    try {
      await refresh();
    } catch (error) {
      failed(error);
      return;
    }
    if (!stopped) timer = setTimeout(loop, POLL_MS);
  };
  onLeave(() => {
    stopped = true;
    clearTimeout(timer);
    live.destroy();
    hour.destroy();
    errors.destroy();
  });
  await loop();
}

/** Exec calls per second and the share of calls refused, over the last hour, every workspace known. */
async function lastHour(api: AdminApi, sessions: SessionInfo[]): Promise<HourFigures> {
  const ids = new Set<string>([
    ...(await api.workspaces()).map((row) => row.workspaceId),
    ...sessions.map((session) => session.workspace),
  ]);
  const chosen = [...ids].sort().slice(0, MAX_WORKSPACES);
  const since = new Date(Date.now() - 3_600_000);
  const reports = await Promise.all(chosen.map((workspace) => api.usage(workspace, "hour", since)));
  let execCalls = 0;
  let denied = 0;
  let created = 0;
  for (const report of reports) {
    execCalls += report.totals.execCalls;
    denied += report.totals.denied;
    created += report.totals.sessions;
  }
  const attempts = execCalls + created + denied;
  return {
    callsPerSecond: execCalls / 3600,
    refusedPercent: attempts === 0 ? 0 : (100 * denied) / attempts,
    workspaces: chosen.length,
    more: ids.size > chosen.length,
  };
}

function card(label: string, value: string, help?: string): HTMLElement {
  return h(
    "div",
    { class: "card" },
    h("div", { class: "card-value" }, value),
    h("div", { class: "card-label" }, label),
    help ? h("div", { class: "help" }, help) : null,
  );
}

function drawCards(
  cards: HTMLElement,
  sessions: SessionInfo[],
  hour: HourFigures | undefined,
  minutes: AnswerMinute[],
): void {
  const calls = minutes.reduce((sum, minute) => sum + minute.calls, 0);
  const failed = minutes.reduce((sum, minute) => sum + minute.serverErrors, 0);
  const sandbox = minutes.reduce((sum, minute) => sum + minute.sandboxErrors, 0);
  const count = (state: SessionInfo["state"]) => sessions.filter((session) => session.state === state).length;
  replace(
    cards,
    card("Sessions running", String(count("running"))),
    card("Hibernated", String(count("hibernated"))),
    card("Calls in flight", String(sessions.reduce((sum, session) => sum + session.activeCalls, 0))),
    card(
      "Exec calls/s, last hour",
      hour ? hour.callsPerSecond.toFixed(3) : "-",
      hour
        ? `${hour.workspaces} workspace${hour.workspaces === 1 ? "" : "s"}${hour.more ? " (first 25)" : ""}`
        : "",
    ),
    card("Refused, last hour", hour ? `${hour.refusedPercent.toFixed(1)} %` : "-", "by policy or quota"),
    card(
      "Server errors, last hour",
      calls === 0 ? "0" : `${failed} (${((100 * failed) / calls).toFixed(1)} %)`,
      `5xx answers of this replica's ${calls} calls; ${sandbox} sandbox failures`,
    ),
  );
}

function drawPools(section: HTMLElement, pools: Pool[], sessions: SessionInfo[]): void {
  const hibernated = (pool: string) =>
    sessions.filter((session) => session.pool === pool && session.state === "hibernated").length;
  const startRate = (pool: Pool) =>
    pool.engineStarts.startsPerSecond === null ? "-" : `${pool.engineStarts.startsPerSecond.toFixed(2)}/s`;
  replace(
    section,
    h("h2", { id: "pools-heading" }, "Pools"),
    table(
      [
        "Pool",
        "Image",
        "Warm",
        "Leased",
        "Parked",
        "Starting",
        "Hibernated",
        "Start rate",
        "Sizes",
        "Last start error",
      ],
      pools.map((pool) => [
        pool.name,
        h("code", null, pool.image),
        String(pool.idle),
        String(pool.leased),
        String(pool.parked),
        String(pool.starting),
        String(hibernated(pool.name)),
        startRate(pool),
        `min ${pool.minIdle}, max ${pool.maxTotal}`,
        pool.lastStartError ? `${pool.lastStartError.message} (${when(pool.lastStartError.at)})` : "none",
      ]),
      "No pool is configured. Pools come from the configuration's pools list (docs/configuration.md).",
    ),
    sessions.length === 0
      ? h(
          "p",
          { class: "empty" },
          "No session is running. Sessions appear here as clients lease them (POST /sessions).",
        )
      : h(
          "p",
          { class: "help" },
          "Busiest workspaces: ",
          busiest(sessions).map(([workspace, count], index) => [
            index > 0 ? ", " : "",
            h("a", { href: workspaceHref(workspace, "sessions") }, workspace),
            ` (${count})`,
          ]),
        ),
  );
}

function busiest(sessions: SessionInfo[]): [string, number][] {
  const counts = new Map<string, number>();
  for (const session of sessions) counts.set(session.workspace, (counts.get(session.workspace) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1]).slice(0, 5);
}
