/**
 * The lease bench's figures: one object (printed as JSON with --json) and the text report,
 * every figure beside its baseline and the issue's targets with pass/fail marks.
 */

import { formatBreakdown } from "./exec-cpu.mjs";
import { summarize } from "./stats.mjs";
import { checkAtLeast, checkAtMost, heading, latencyTable, printTable } from "./table.mjs";
import { formatMs } from "./timing.mjs";

const TARGETS = {
  ownExecWorkP50Ms: 0.5,
  throughputToRelay: 0.7,
  refillCreateP99Ms: 25,
  holdingRssMb: 150,
  devRestMb: 250,
  devWarmP50Ms: 5,
  devWarmP99Ms: 25,
  devColdRatio: 20,
  dockerColdRatio: 50,
};

/**
 * Each gateway is held to the baseline of its own sandboxes: serve's run in containers (the
 * docker runtime's spec, with its per-call work), dev's are processes. `direct` is straight
 * to that sandbox, `relay` a no-logic relay in front of it.
 */
const CONTAINER_BASELINE = { direct: "directContainer", relay: "relayContainer" };
const PROCESS_BASELINE = { direct: "direct", relay: "relay" };
const BASELINES = {
  serve: CONTAINER_BASELINE,
  directContainer: CONTAINER_BASELINE,
  relayContainer: CONTAINER_BASELINE,
  dev: PROCESS_BASELINE,
  direct: PROCESS_BASELINE,
  relay: PROCESS_BASELINE,
};

const round = (x, digits = 3) => (Number.isFinite(x) ? Number(x.toFixed(digits)) : null);
const stats = (samples) =>
  Object.fromEntries(Object.entries(summarize(samples)).map(([k, v]) => [k, k === "n" ? v : round(v)]));

/** The figures as one plain object, with the targets' verdicts. */
export function buildFigures(r) {
  const lat = Object.fromEntries(Object.entries(r.exec.latency).map(([k, v]) => [k, summarize(v)]));
  const baseOf = (name) => BASELINES[name];
  const added = (name) => lat[name].median - lat[baseOf(name).direct].median;
  const ownWork = (name) => lat[name].median - lat[baseOf(name).relay].median;
  const ratio = (name) => r.exec.throughput[name] / r.exec.throughput[baseOf(name).relay];
  const refill = summarize(r.serve.refill.samples);
  const serveWarm = summarize(r.serve.warm.samples);
  const serveCold = summarize(r.serve.cold.samples);
  const devWarm = summarize(r.dev.warm.samples);
  const devCold = summarize(r.dev.cold.samples);
  const targets = [
    [
      "serve: gateway's own exec work p50 (added latency minus the relay's)",
      ownWork("serve"),
      "ms",
      checkAtMost(ownWork("serve"), TARGETS.ownExecWorkP50Ms, " ms"),
    ],
    [
      "serve: exec throughput, 8 clients, x relay",
      ratio("serve"),
      "x",
      checkAtLeast(ratio("serve"), TARGETS.throughputToRelay, "x"),
    ],
    [
      "serve: warm CreateSession p99 while the pool refills",
      refill.p99,
      "ms",
      checkAtMost(refill.p99, TARGETS.refillCreateP99Ms, " ms"),
    ],
    [
      "gateway RSS holding 1,000 leased sessions",
      r.holding.holdingMb,
      "MB",
      checkAtMost(r.holding.holdingMb, TARGETS.holdingRssMb, " MB"),
    ],
    [
      "dev mode RSS at rest (gateway + PGlite)",
      r.dev.restRss.totalMb,
      "MB",
      checkAtMost(r.dev.restRss.totalMb, TARGETS.devRestMb, " MB"),
    ],
    [
      "dev: warm CreateSession p50 (single lease)",
      devWarm.median,
      "ms",
      checkAtMost(devWarm.median, TARGETS.devWarmP50Ms, " ms"),
    ],
    [
      "dev: warm CreateSession p99 (single lease)",
      devWarm.p99,
      "ms",
      checkAtMost(devWarm.p99, TARGETS.devWarmP99Ms, " ms"),
    ],
    [
      "dev: cold/warm median ratio",
      devCold.median / devWarm.median,
      "x",
      checkAtLeast(devCold.median / devWarm.median, TARGETS.devColdRatio, "x"),
    ],
    [
      "serve: docker cold/warm median ratio",
      serveCold.median / serveWarm.median,
      "x",
      checkAtLeast(serveCold.median / serveWarm.median, TARGETS.dockerColdRatio, "x"),
    ],
  ].map(([name, value, unit, check]) => ({
    name,
    value: round(value),
    unit,
    limit: check.label,
    pass: check.pass,
  }));
  return {
    machine: r.machine,
    createSession: {
      serve: {
        warmSingle: stats(r.serve.warm.samples),
        warmWhileRefilling: { ...stats(r.serve.refill.samples), spacingMs: r.serve.spacingMs },
        cold: stats(r.serve.cold.samples),
        gatewayCounts: counts(r.serve),
      },
      dev: {
        warmSingle: stats(r.dev.warm.samples),
        warmBursts: stats(r.dev.bursts.samples),
        cold: stats(r.dev.cold.samples),
        gatewayCounts: counts(r.dev),
      },
    },
    exec: {
      latency: Object.fromEntries(Object.entries(r.exec.latency).map(([k, v]) => [k, stats(v)])),
      addedP50Ms: {
        relay: round(added("relay")),
        relayContainer: round(added("relayContainer")),
        serve: round(added("serve")),
        dev: round(added("dev")),
      },
      ownWorkP50Ms: { serve: round(ownWork("serve")), dev: round(ownWork("dev")) },
      throughputPerSecond: Object.fromEntries(
        Object.entries(r.exec.throughput).map(([k, v]) => [k, round(v, 1)]),
      ),
      throughputToRelay: {
        serve: round(ratio("serve")),
        dev: round(ratio("dev")),
        direct: round(ratio("direct")),
        directContainer: round(ratio("directContainer")),
      },
      // CPU microseconds per exec of each path's process (the sandbox server's for direct).
      cpuUsPerExec: Object.fromEntries(
        Object.entries(r.exec.cpu).map(([k, v]) => [
          k,
          {
            oneAtATime: round(v.sequentialUs, 0),
            concurrent: round(v.concurrentUs, 0),
            machineConcurrent: round(v.machineConcurrentUs, 0),
          },
        ]),
      ),
      // Where each gateway's time per exec went, one call at a time (its own metrics, ms).
      handlerBreakdownMs: Object.fromEntries(
        ["serve", "dev"].map((k) => [
          k,
          Object.fromEntries(
            Object.entries(r.exec.cpu[k].breakdownMs ?? {}).map(([p, v]) => [p, round(v, 3)]),
          ),
        ]),
      ),
      // The gateway's own CPU per exec: its process's beyond the relay's.
      ownCpuUsPerExec: Object.fromEntries(
        ["serve", "dev"].map((k) => [
          k,
          {
            oneAtATime: round(r.exec.cpu[k].sequentialUs - r.exec.cpu[baseOf(k).relay].sequentialUs, 0),
            concurrent: round(r.exec.cpu[k].concurrentUs - r.exec.cpu[baseOf(k).relay].concurrentUs, 0),
          },
        ]),
      ),
    },
    memory: {
      serveAtRestMb: round(r.serve.restMb, 1),
      gatewayHolding: {
        sessions: r.holding.sessions,
        restMb: round(r.holding.restMb, 1),
        holdingMb: round(r.holding.holdingMb, 1),
        perSessionKb: round(r.holding.perSessionKb, 1),
      },
      devAtRest: mb(r.dev.restRss),
      devAtRestAfterWork: mb(r.dev.workedRss),
    },
    targets,
  };
}

function counts(phase) {
  const sum = (key) =>
    Object.values(phase)
      .filter((m) => m && typeof m === "object" && key in m)
      .reduce((total, m) => total + m[key], 0);
  return { warmLeases: sum("warmLeases"), coldLeases: sum("coldLeases") };
}

function mb(rss) {
  return Object.fromEntries(Object.entries(rss).map(([k, v]) => [k, round(v, 1)]));
}

const { headers, row } = latencyTable(["n", "median", "p90", "p99", "min", "max"]);
const mbText = (x) => (Number.isFinite(x) ? `${x.toFixed(0)} MB` : "-");

export function printReport(r, figures) {
  const m = r.machine;
  process.stdout.write(
    `sandpool lease bench  node ${m.node}  python ${m.python}\n` +
      "serve: Redis + Postgres + docker runtime (image sandpool/sandbox:dev); dev: PGlite, memory store, process runtime.\n" +
      `Loopback, HTTP keep-alive via undici. Machine: ${m.cpus} CPUs; load average at the start ${m.loadStart}, at the end ${m.loadEnd}\n`,
  );
  heading("CreateSession");
  printTable(headers, [
    row(`serve, warm, single lease on a full pool (min_idle ${r.serve.minIdle})`, r.serve.warm.samples),
    row(
      `serve, warm while the pool refills (one create every ${r.serve.spacingMs} ms)`,
      r.serve.refill.samples,
      target(figures, 2),
    ),
    row("serve, cold (every create starts a container)", r.serve.cold.samples),
    row(
      `dev, warm, single lease on a full pool (min_idle ${r.dev.minIdle})`,
      r.dev.warm.samples,
      target(figures, 5),
    ),
    row(`info: dev, warm, bursts of ${r.dev.burst}`, r.dev.bursts.samples),
    row("dev, cold (every create starts a sandbox process)", r.dev.cold.samples),
  ]);
  const sc = figures.createSession.serve.gatewayCounts;
  const dc = figures.createSession.dev.gatewayCounts;
  process.stdout.write(
    `gateway's counts: serve ${sc.warmLeases} warm, ${sc.coldLeases} cold; dev ${dc.warmLeases} warm, ${dc.coldLeases} cold\n`,
  );

  heading(
    `Exec "print(1)" (${r.exec.latency.direct.length} calls per path, the paths in a new order every round)`,
  );
  printTable(headers, [
    row("straight to a sandbox container (as serve runs them)", r.exec.latency.directContainer),
    row("through a relay with no logic to it (serve's baseline)", r.exec.latency.relayContainer),
    row("straight to a sandbox process (sandpool sandbox)", r.exec.latency.direct),
    row("through a relay with no logic to it (dev's baseline)", r.exec.latency.relay),
    row("through sandpool serve (to a container)", r.exec.latency.serve),
    row("through sandpool dev (to a sandbox process)", r.exec.latency.dev),
  ]);
  const e = figures.exec;
  process.stdout.write(
    `added to its sandbox's direct p50: relay ${formatMs(e.addedP50Ms.relayContainer)} (container) / ${formatMs(e.addedP50Ms.relay)} (process), ` +
      `serve ${formatMs(e.addedP50Ms.serve)}, dev ${formatMs(e.addedP50Ms.dev)}; ` +
      `the gateway's own work (added minus its relay's): serve ${formatMs(e.ownWorkP50Ms.serve)}, dev ${formatMs(e.ownWorkP50Ms.dev)}\n`,
  );
  heading(`Exec throughput, ${r.exec.clients} concurrent clients (a session and a connection each)`);
  printTable(
    ["path", "exec/s", "x its relay"],
    ["directContainer", "relayContainer", "serve", "direct", "relay", "dev"].map((name) => [
      name,
      e.throughputPerSecond[name].toFixed(0),
      name.startsWith("relay") ? "1.00" : e.throughputToRelay[name].toFixed(2),
    ]),
  );

  heading(
    `Exec CPU per call (${r.exec.cpuCalls} calls each way; microseconds of the process's CPU, all threads)`,
  );
  printTable(
    [
      "process",
      "one at a time",
      `${r.exec.clients} clients`,
      "beyond the relay",
      `machine, ${r.exec.clients} clients`,
    ],
    [
      ["the sandbox container's server (direct)", "directContainer"],
      ["the relay to it", "relayContainer"],
      ["sandpool serve's gateway", "serve"],
      ["the sandbox process (direct)", "direct"],
      ["the relay to it", "relay"],
      ["sandpool dev's gateway", "dev"],
    ].map(([label, name]) => {
      const c = e.cpuUsPerExec[name];
      const own = e.ownCpuUsPerExec[name];
      return [
        label,
        `${c.oneAtATime} us`,
        `${c.concurrent} us`,
        own ? `${own.oneAtATime} / ${own.concurrent} us` : "",
        `${c.machineConcurrent} us`,
      ];
    }),
  );

  for (const name of ["serve", "dev"]) {
    const b = e.handlerBreakdownMs[name];
    if (b.handler !== undefined)
      process.stdout.write(`  ${name}'s handlers, one at a time: ${formatBreakdown(b)}\n`);
  }

  heading("Memory (RSS, ps -o rss)");
  const h = figures.memory.gatewayHolding;
  const d = figures.memory.devAtRest;
  const w = figures.memory.devAtRestAfterWork;
  printTable(
    ["measure", "RSS"],
    [
      [
        `sandpool serve at rest (docker runtime, ${r.serve.minIdle} warm containers)`,
        mbText(figures.memory.serveAtRestMb),
      ],
      ["serve's gateway with the bench's light runtime, at rest", mbText(h.restMb)],
      [`the same holding ${h.sessions} leased sessions (${h.perSessionKb} KB each)`, mbText(h.holdingMb)],
      [`dev at rest: gateway ${mbText(d.gatewayMb)} + PGlite ${mbText(d.databaseMb)}`, mbText(d.totalMb)],
      [
        `dev at rest after the dev phases: gateway ${mbText(w.gatewayMb)} + PGlite ${mbText(w.databaseMb)}`,
        mbText(w.totalMb),
      ],
    ],
  );

  heading("Targets");
  printTable(
    ["target", "figure", "limit", "result"],
    figures.targets.map((t) => [
      t.name,
      `${t.value}${t.unit === "x" ? "x" : ` ${t.unit}`}`,
      t.limit,
      t.pass ? "PASS" : "FAIL",
    ]),
  );
}

function target(figures, index) {
  const t = figures.targets[index];
  return { label: t.limit, verdict: t.pass ? "PASS" : "FAIL" };
}
