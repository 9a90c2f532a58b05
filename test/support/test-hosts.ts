/**
 * Test hosts: several "machines" on this one, for multi-host tests (issue 9). Each is a
 * network namespace on a private test network with a Docker engine of its own:
 *
 *   const hosts = await startTestHosts(2);          // sweeps a killed run's leftovers first
 *   const [a, b] = [hosts.host(0), hosts.host(1)];
 *   new DockerRuntime({ hosts: [a.dockerHost], ... }); // or a.engine (dockerode), a.docker([...])
 *   const node = a.spawn(process.execPath, ["dist/cli/main.js", "serve", ...], { env });
 *   await node.waitForOutput(/listening/);
 *   await probeTcp(a.address, port);                  // from the root namespace
 *   await b.probe(a.address, port);                   // from inside host B
 *   await a.cut(); ...; await a.restore();            // network partition of host A
 *   await node.kill("SIGKILL");                       // a crash; node.restart() to bring it back
 *   const redis = await hosts.relayLoopback(6379);    // 127.0.0.1:6379 as <rootAddress>:6379
 *   await hosts.close();                              // everything but the image cache
 *
 * Addresses: the root namespace is 10.213.0.1, host i is 10.213.0.(10 + i), one /24 and
 * no default route anywhere (see test-hosts/layout.ts for the picture). The engines' data
 * roots live in /var/lib/sandpool-test-hosts/<i> and keep their images between runs; the
 * images are copied from the main engine (docker save | docker load) only when their id
 * differs. One run at a time per machine (a lock in /run/sandpool-test-hosts). Needs root.
 *
 * Only the network is per host: the hosts share this machine's filesystem and processes, so
 * a node in host A and A's engine see a sandbox's socket directory (runtime.docker.socketDir)
 * at the same path. Put it below `a.runDir` (short: a Unix socket's path is at most 107
 * bytes) and close() removes it. A process in a host reaches the root namespace's loopback
 * services (Redis, Postgres) only through relayLoopback(), and the test process reaches a
 * host's processes only at `host.address`.
 */
import { randomBytes } from "node:crypto";
import { mkdir } from "node:fs/promises";
import Dockerode from "dockerode";
import { SANDBOX_IMAGE } from "./docker-suite.js";
import { requireService } from "./require-service.js";
import { imageId, loadImages } from "./test-hosts/engine.js";
import {
  DEFAULT_CACHE_DIR,
  DEFAULT_RUN_DIR,
  DEFAULT_SUBNET,
  type Layout,
  MAX_HOSTS,
  rootAddress,
  rootLink,
  switchNamespace,
} from "./test-hosts/layout.js";
import {
  findLeftovers,
  killAll,
  type Leftovers,
  namespacePids,
  sweepLeftovers,
} from "./test-hosts/leftovers.js";
import { acquireRunLock } from "./test-hosts/lock.js";
import { type LoopbackRelay, startLoopbackRelay } from "./test-hosts/loopback-relay.js";
import { assertSubnetFree, createHostNetwork, createSwitch } from "./test-hosts/network.js";
import { checkPrerequisites, TestHostsUnavailableError } from "./test-hosts/prerequisites.js";
import { ip } from "./test-hosts/run-command.js";
import { TestHost } from "./test-hosts/test-host.js";

export type { HostProcess, ProcessExit, SpawnOptions } from "./test-hosts/host-process.js";
export type { Leftovers } from "./test-hosts/leftovers.js";
export { isEmpty as noLeftovers } from "./test-hosts/leftovers.js";
export { probeTcp } from "./test-hosts/tcp-probe.js";
export { TestHost, TestHostsUnavailableError };

export interface TestHostsOptions {
  /** Images every host's engine gets from the main engine (default: the sandbox image). */
  images?: string[];
  /** The engines' data roots, kept between runs (default /var/lib/sandpool-test-hosts). */
  cacheDir?: string;
  /** Run-time state, removed at close() (default /run/sandpool-test-hosts). */
  runDir?: string;
  /** First three octets of the test network's /24 (default 10.213.0). */
  subnet?: string;
  /** One line per host and step (default: to stderr, prefixed "test-hosts:"). */
  log?: (line: string) => void;
  /** How long one engine may take to answer (default 60 s). */
  engineStartTimeoutMs?: number;
  /** How long one image copy may take (default 5 min). */
  imageLoadTimeoutMs?: number;
  /** How long to wait for another run holding the machine's test hosts (default 10 min). */
  lockTimeoutMs?: number;
}

export interface HostTimings {
  networkMs: number;
  engineMs: number;
  imagesMs: number;
  /** The images copied in (empty when the cache already had them). */
  loaded: string[];
}

export interface TestHostsTimings {
  totalMs: number;
  sweepMs: number;
  hosts: HostTimings[];
}

export interface TestHosts {
  /** A short random id in every name this run creates. */
  readonly run: string;
  readonly hosts: TestHost[];
  /** hosts[index], or an error naming the count (no `!` needed under noUncheckedIndexedAccess). */
  host(index: number): TestHost;
  /** The root namespace's address on the test network: where a test host reaches the test process. */
  readonly rootAddress: string;
  readonly timings: TestHostsTimings;
  /**
   * Makes a root-namespace loopback service (Redis, Postgres) reachable from the hosts at
   * `{ host: rootAddress, port }` (the same port unless `listenPort` is given; 0 picks one).
   */
  relayLoopback(port: number, listenPort?: number): Promise<{ host: string; port: number }>;
  /**
   * What test hosts have on this machine: namespaces and links of this run, and any process,
   * cgroup or mount of the test hosts' engines (all empty after close() of the last run).
   */
  leftovers(): Promise<Leftovers>;
  /** Removes everything the run created but the image cache. Idempotent. */
  close(): Promise<void>;
}

/** This process's open run: a run that is not (a later start took over) is gone already. */
let activeRun: string | undefined;

const defaultLog = (line: string) => process.stderr.write(`test-hosts: ${line}\n`);

export async function startTestHosts(count: number, options: TestHostsOptions = {}): Promise<TestHosts> {
  if (!Number.isInteger(count) || count < 1 || count > MAX_HOSTS) {
    throw new Error(`startTestHosts: count is 1..${MAX_HOSTS}, not ${count}`);
  }
  const began = Date.now();
  const images = options.images ?? [SANDBOX_IMAGE];
  const log = options.log ?? defaultLog;
  const layout: Layout = {
    run: randomBytes(2).toString("hex"),
    subnet: options.subnet ?? DEFAULT_SUBNET,
    runDir: options.runDir ?? DEFAULT_RUN_DIR,
    cacheDir: options.cacheDir ?? DEFAULT_CACHE_DIR,
  };
  if (!/^\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(layout.subnet)) {
    throw new Error(
      `startTestHosts: subnet is the first three octets of a /24 (e.g. 10.213.0), not ${layout.subnet}`,
    );
  }
  await checkPrerequisites(images);
  const lock = await acquireRunLock(layout.runDir, layout.run, options.lockTimeoutMs ?? 600_000, log);
  activeRun = layout.run;
  const hosts: TestHost[] = [];
  const relays: LoopbackRelay[] = [];
  let switchCreated = false;
  let closed = false;

  const close = async () => {
    if (closed) return;
    closed = true;
    await Promise.all(relays.map((relay) => relay.close()));
    // A later start took over (this run was never closed) and its sweep removed all of this
    // run: the hosts' directories and data roots are the later run's now, hands off.
    if (activeRun !== layout.run || (await lock.superseded())) return;
    activeRun = undefined;
    const problems: string[] = [];
    await Promise.all(
      hosts.map((host) =>
        host.close().catch((error: Error) => problems.push(`${host.name}: ${error.message}`)),
      ),
    );
    if (switchCreated) {
      const sw = switchNamespace(layout);
      await killAll(await namespacePids(sw).catch(() => []));
      // Deleting the switch's namespace takes the root end of its uplink with it.
      await ip(["netns", "del", sw]).catch((error: Error) => {
        if (!/No such file/.test(error.message)) problems.push(error.message);
      });
      await ip(["link", "del", rootLink(layout)]).catch(() => undefined);
    }
    await lock.release();
    if (problems.length > 0) throw new Error(`test hosts: close() left work undone: ${problems.join("; ")}`);
  };

  try {
    const sweepBegan = Date.now();
    await sweepLeftovers({ runDir: layout.runDir, cacheDir: layout.cacheDir }, log);
    const sweepMs = Date.now() - sweepBegan;
    await assertSubnetFree(layout);
    await mkdir(layout.cacheDir, { recursive: true, mode: 0o711 });
    switchCreated = true;
    await createSwitch(layout);
    log(`run ${layout.run}: test network ${layout.subnet}.0/24, root namespace at ${rootAddress(layout)}`);
    const main = new Dockerode({ timeout: 30_000 });
    const wanted = await Promise.all(images.map(async (tag) => ({ tag, id: (await imageId(main, tag))! })));
    for (let index = 0; index < count; index++) {
      hosts.push(new TestHost(index, layout, options.engineStartTimeoutMs ?? 60_000));
    }
    const hostTimings = await Promise.all(
      hosts.map(async (host): Promise<HostTimings> => {
        const step = (what: string, since: number) =>
          log(`[${host.name}] ${what} (${((Date.now() - since) / 1000).toFixed(1)} s)`);
        const t0 = Date.now();
        await createHostNetwork(layout, host.index);
        step(`namespace ${host.namespace}, ${host.address} on the test network`, t0);
        const t1 = Date.now();
        await host.startEngine();
        const stale = await host.removeAllContainers();
        step(
          `dockerd answers at ${host.dockerHost}${stale ? `, ${stale} stale containers removed` : ""}`,
          t1,
        );
        const t2 = Date.now();
        const missing: string[] = [];
        for (const { tag, id } of wanted) if ((await imageId(host.engine, tag)) !== id) missing.push(tag);
        if (missing.length > 0) {
          await loadImages(missing, host.runDir, options.imageLoadTimeoutMs ?? 300_000);
          for (const { tag, id } of wanted) {
            const got = await imageId(host.engine, tag);
            if (got !== id)
              throw new Error(`${host.name}: ${tag} loaded as ${got}, not the main engine's ${id}`);
          }
          step(`loaded ${missing.join(", ")}`, t2);
        } else {
          step(`images cached (${images.join(", ")})`, t2);
        }
        return { networkMs: t1 - t0, engineMs: t2 - t1, imagesMs: Date.now() - t2, loaded: missing };
      }),
    );
    const timings = { totalMs: Date.now() - began, sweepMs, hosts: hostTimings };
    log(`${count} test hosts ready in ${(timings.totalMs / 1000).toFixed(1)} s`);
    return {
      run: layout.run,
      hosts,
      host: (index) => {
        const host = hosts[index];
        if (!host) throw new Error(`test hosts: no host ${index} (there are ${hosts.length})`);
        return host;
      },
      rootAddress: rootAddress(layout),
      timings,
      relayLoopback: async (port, listenPort) => {
        const relay = await startLoopbackRelay(rootAddress(layout), port, listenPort);
        relays.push(relay);
        return { host: relay.host, port: relay.port };
      },
      leftovers: () => findLeftovers({ runDir: layout.runDir, cacheDir: layout.cacheDir, run: layout.run }),
      close,
    };
  } catch (error) {
    await close().catch((closeError: Error) => log(`clean-up after a failed start: ${closeError.message}`));
    throw error;
  }
}

/**
 * The gate of a multi-host suite: true when test hosts can start here. Otherwise a loud
 * skip locally and a failure under CI=true (requireService), naming what is missing.
 */
export function testHostsAvailable(images: string[] = [SANDBOX_IMAGE]): Promise<boolean> {
  return requireService(
    "test hosts",
    async () => {
      await checkPrerequisites(images);
      return true;
    },
    { start: "the commands in .ci/run, as root" },
  );
}
