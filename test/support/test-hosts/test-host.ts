/**
 * One test host: a network namespace on the test network with its own Docker engine. The
 * API another test builds on (see test-hosts.ts for how to get some).
 */
import { readFile, rm } from "node:fs/promises";
import path from "node:path";
import type Dockerode from "dockerode";
import { engineClient, engineSocket, removeAllContainers, startEngine } from "./engine.js";
import { describeExit, HostProcess, type SpawnOptions, stopHostProcesses } from "./host-process.js";
import {
  hostAddress,
  hostCgroupParent,
  hostDataRoot,
  hostNamespace,
  hostRunDir,
  type Layout,
  netnsPath,
} from "./layout.js";
import { clearCgroups, killAll, mountsBelow, namespacePids, ourCgroups, unmountAll } from "./leftovers.js";
import { setHostLink } from "./network.js";
import { type CommandOptions, type CommandResult, ip, runCommand } from "./run-command.js";
import { type ProbeResult, probeTcpScript } from "./tcp-probe.js";

export class TestHost {
  /** The network namespace's name (`ip netns`). */
  readonly namespace: string;
  /** Its path, for `nsenter --net=<netnsPath>`. */
  readonly netnsPath: string;
  /** Its address on the test network (eth0), reachable from the root namespace and the other hosts. */
  readonly address: string;
  /** Scratch space of this run (the engine's socket, pid file, exec root): removed at close(). */
  readonly runDir: string;
  /** The engine's data root: kept between runs. */
  readonly dataRoot: string;
  /** `unix:///run/sandpool-test-hosts/<i>/docker.sock`, for DOCKER_HOST and the docker runtime's hosts. */
  readonly dockerHost: string;
  /** A dockerode client of this host's engine. */
  readonly engine: Dockerode;
  private dockerd: HostProcess | undefined;
  private readonly processes = new Set<HostProcess>();
  private linkUp = true;

  constructor(
    readonly index: number,
    private readonly layout: Layout,
    private readonly engineStartTimeoutMs: number,
  ) {
    this.namespace = hostNamespace(layout, index);
    this.netnsPath = netnsPath(this.namespace);
    this.address = hostAddress(layout, index);
    this.runDir = hostRunDir(layout, index);
    this.dataRoot = hostDataRoot(layout, index);
    this.dockerHost = `unix://${engineSocket(this.runDir)}`;
    this.engine = engineClient(this.runDir);
  }

  get name(): string {
    return `host ${this.index}`;
  }

  /** False between cut() and restore(). */
  get connected(): boolean {
    return this.linkUp;
  }

  /** True while this host's dockerd runs. */
  get engineRunning(): boolean {
    return this.dockerd?.running === true;
  }

  /**
   * Starts a long-running process inside the host's namespace (it sees only the host's
   * network: its loopback and eth0). close() stops it; so does kill() on the result.
   */
  spawn(command: string, args: readonly string[] = [], options: SpawnOptions = {}): HostProcess {
    return new HostProcess(
      this.netnsPath,
      command,
      args,
      { label: `${this.name}: ${command}`, ...options },
      this.processes,
    );
  }

  /** Runs a command to completion inside the namespace (bounded: 15 s unless told). */
  run(
    command: string,
    args: readonly string[] = [],
    options: CommandOptions = {},
  ): Promise<CommandResult & { code: number }> {
    return runCommand("nsenter", [`--net=${this.netnsPath}`, "--", command, ...args], options);
  }

  /** The docker CLI against this host's engine; its stdout. */
  async docker(args: readonly string[], options: CommandOptions = {}): Promise<string> {
    return (await runCommand("docker", ["-H", this.dockerHost, ...args], { timeoutMs: 60_000, ...options }))
      .stdout;
  }

  /** A TCP connect from inside this host: "connected", an errno code, or "timeout". */
  async probe(host: string, port: number, timeoutMs = 1_000): Promise<ProbeResult> {
    const { stdout } = await this.run(process.execPath, ["-e", probeTcpScript(host, port, timeoutMs)], {
      timeoutMs: timeoutMs + 10_000,
    });
    return stdout.trim();
  }

  /** Network partition: the host's switch port goes down; nothing reaches it, nothing leaves it. */
  async cut(): Promise<void> {
    await setHostLink(this.layout, this.index, false);
    this.linkUp = false;
  }

  /** Ends the partition. */
  async restore(): Promise<void> {
    await setHostLink(this.layout, this.index, true);
    this.linkUp = true;
  }

  /** Starts the host's dockerd (done by startTestHosts; again after stopEngine()). */
  async startEngine(): Promise<void> {
    if (this.engineRunning) return;
    this.dockerd = await startEngine(
      this.netnsPath,
      { dataRoot: this.dataRoot, runDir: this.runDir, cgroupParent: hostCgroupParent(this.index) },
      this.processes,
      `${this.name}: dockerd`,
      this.engineStartTimeoutMs,
    );
  }

  /**
   * Stops the host's engine: SIGTERM (dockerd stops its containers and its containerd) or
   * SIGKILL (an engine that dies: dockerd and its containerd are killed, the containers'
   * shims and processes live on; a dockerd started again stops them, as after a crash).
   */
  async stopEngine(signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
    const dockerd = this.dockerd;
    if (!dockerd?.running) return;
    const pidFile = path.join(this.runDir, "exec", "containerd", "containerd.pid");
    const containerd = await readFile(pidFile, "utf8")
      .then((text) => Number.parseInt(text, 10))
      .catch(() => Number.NaN);
    const exit = await dockerd.kill(signal, 20_000);
    if (signal === "SIGKILL" && Number.isInteger(containerd)) {
      // An orphaned containerd keeps its database locked, and a dockerd that finds its pid
      // file waits for it instead of starting one: kill it and forget it.
      await killAll([containerd]);
      await rm(pidFile, { force: true });
    }
    if (signal === "SIGTERM" && exit.code !== 0 && exit.signal === null) {
      throw new Error(`${this.name}: dockerd exited with ${describeExit(exit)}:\n${dockerd.tail()}`);
    }
  }

  /** Removes every container on this host's engine (it is the test host's alone). */
  removeAllContainers(): Promise<number> {
    return removeAllContainers(this.engine);
  }

  /** Everything of this host but its image cache: processes, engine, namespace, run directory. */
  async close(): Promise<void> {
    const dockerd = this.dockerd;
    const others = new Set([...this.processes].filter((p) => p !== dockerd));
    await stopHostProcesses(others);
    if (this.engineRunning) {
      await this.removeAllContainers().catch(() => undefined);
      await this.stopEngine().catch(() => this.stopEngine("SIGKILL"));
    }
    // containerd's shims and whatever else still sits in the namespace.
    await killAll(await namespacePids(this.namespace).catch(() => []));
    // Containers outlive a SIGKILLed engine (stopEngine("SIGKILL")): they sit in its cgroups.
    await clearCgroups(await ourCgroups(hostCgroupParent(this.index)));
    await unmountAll(await mountsBelow([this.runDir, this.dataRoot]));
    await ip(["netns", "del", this.namespace]).catch((error: Error) => {
      if (!/No such file|Cannot remove/.test(error.message)) throw error;
    });
    await rm(this.runDir, { recursive: true, force: true });
  }
}
