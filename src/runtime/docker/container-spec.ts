/**
 * The create-container body for one sandbox. Everything that keeps user code in its box is
 * decided here, in one place, so it can be read (and reviewed) as a whole:
 * no capabilities, no-new-privileges, never privileged, no bind mounts or volumes (so never
 * the Docker socket), a read-only root with size-capped tmpfs for the workspace and /tmp,
 * memory without swap, a pids cap, CPU quota, capped container logs, and no network at all:
 * the one mount is the sandbox's own socket directory, where its server listens on a Unix
 * socket for the gateway. Nothing in the box can open a connection to anything outside it.
 */
import type { ContainerCreateOptions, HostConfig } from "dockerode";
import {
  type DockerRuntimeOptions,
  type ResourceClass,
  SANDBOX_SOCKET_NAME,
} from "./docker-runtime-options.js";

/** Where a sandbox's own socket directory is mounted inside its container. */
export const SOCKET_MOUNT = "/run/sandpool";
/** The gateway owns session lifetimes; the sandbox server must never end one first. */
const SANDBOX_SESSION_SECONDS = "31536000";

/** Where an egress sandbox's proxy socket sits in its directory, and the port it is offered on inside. */
export const EGRESS_SOCKET_NAME = "egress.sock";
const EGRESS_PROXY_URL = "http://127.0.0.1:3128";

export const LABELS = {
  deployment: "sandpool.deployment",
  owner: "sandpool.owner",
  egress: "sandpool.egress",
  pool: "sandpool.pool",
  sandbox: "sandpool.sandbox",
  engine: "sandpool.engine",
  resourceClass: "sandpool.resource-class",
} as const;

export interface ContainerSpecInput {
  sandboxId: string;
  pool: string;
  image: string;
  resourceClass: ResourceClass;
  resourceClassName: string;
  /** The engine's endpoint as configured, for the `sandpool.engine` label. */
  engineHost: string;
  /** The sandbox's socket directory on the engine's host (and the gateway's). */
  socketDir: string;
  /** Its only way out: the gateway's filtering proxy, offered as an HTTP proxy on its loopback. */
  egress: boolean;
}

export function containerName(deployment: string, sandboxId: string): string {
  // Docker names: [a-zA-Z0-9][a-zA-Z0-9_.-]*; the sandbox id is ours, but never trust a format.
  const safe = sandboxId.replace(/[^a-zA-Z0-9_.-]/g, "_").slice(0, 100);
  return `sandpool-${deployment}-${safe}`;
}

/** Docker API 1.41 fields that @types/dockerode does not declare. */
type FullHostConfig = HostConfig & { CgroupnsMode?: "private" | "host" };

export function buildContainerSpec(
  options: DockerRuntimeOptions,
  input: ContainerSpecInput,
): ContainerCreateOptions {
  return {
    name: containerName(options.deployment, input.sandboxId),
    Image: input.image,
    // The image's ENTRYPOINT (tini) stays PID 1 and reaps what user code orphans.
    Cmd: [
      ...options.serverCommand,
      ...["--socket", `${SOCKET_MOUNT}/${SANDBOX_SOCKET_NAME}`, "--root", options.sessionsRoot],
      ...["--max-sessions", "1"],
      ...["--idle-timeout", SANDBOX_SESSION_SECONDS, "--max-idle-timeout", SANDBOX_SESSION_SECONDS],
      ...["--max-lifetime", SANDBOX_SESSION_SECONDS, "--max-lifetime-ceiling", SANDBOX_SESSION_SECONDS],
      ...["--max-exec-timeout", String(options.execTimeoutCeilingSeconds)],
      ...["--max-upload-bytes", String(options.maxFileBytes)],
      "--reap-strays", // processes a call leaves behind end when it returns: the container is its PID namespace
      ...(options.preloadModules.length > 0 ? ["--preload-modules", options.preloadModules.join(",")] : []),
      ...(input.egress ? ["--egress-proxy-socket", `${SOCKET_MOUNT}/${EGRESS_SOCKET_NAME}`] : []),
    ],
    Env: ["SANDPOOL_LOG_LEVEL=warn", ...(input.egress ? proxyEnvironment() : [])],
    User: options.user,
    Hostname: "sandbox",
    Labels: {
      [LABELS.deployment]: options.deployment,
      ...(options.owner === undefined ? {} : { [LABELS.owner]: options.owner }),
      [LABELS.pool]: input.pool,
      [LABELS.sandbox]: input.sandboxId,
      [LABELS.engine]: input.engineHost,
      [LABELS.resourceClass]: input.resourceClassName,
      ...(input.egress ? { [LABELS.egress]: "true" } : {}),
    },
    // The gateway probes readiness itself; a health check would only spend CPU in the box.
    Healthcheck: { Test: ["NONE"] },
    StopTimeout: 2,
    HostConfig: buildHostConfig(options, input),
  };
}

function buildHostConfig(options: DockerRuntimeOptions, input: ContainerSpecInput): FullHostConfig {
  const [uid, gid] = options.user.split(":");
  const rc = input.resourceClass;
  const ownedTmpfs = `uid=${uid},gid=${gid}`;
  return {
    Privileged: false,
    CapDrop: ["ALL"],
    CapAdd: [],
    SecurityOpt: ["no-new-privileges"],
    ReadonlyRootfs: options.readOnlyRootFilesystem,
    // Always tmpfs, even with a writable root: the overlay has no size cap of its own.
    Tmpfs: {
      [options.sessionsRoot]: `rw,nosuid,nodev,exec,size=${rc.tmpfsBytes},${ownedTmpfs},mode=0700`,
      "/tmp": `rw,nosuid,nodev,noexec,size=${rc.tmpBytes},${ownedTmpfs},mode=1777`,
    },
    Binds: [],
    Mounts: [{ Type: "bind", Source: input.socketDir, Target: SOCKET_MOUNT, ReadOnly: false }],
    Init: false,
    Memory: rc.memoryBytes,
    MemorySwap: rc.memoryBytes,
    NanoCpus: Math.round(rc.cpus * 1e9),
    PidsLimit: rc.pidsLimit,
    // Only a loopback interface: no route to the host, other sandboxes, or anything else.
    NetworkMode: "none",
    PortBindings: {},
    PublishAllPorts: false,
    RestartPolicy: { Name: "no" },
    AutoRemove: false,
    IpcMode: "private",
    // Its own cgroup namespace: /proc/self/cgroup does not show the host's hierarchy.
    CgroupnsMode: "private",
    LogConfig: { Type: "json-file", Config: { "max-size": String(options.logMaxBytes), "max-file": "1" } },
    ...(options.runtime ? { Runtime: options.runtime } : {}),
  };
}

/** Both spellings: curl and pip read the lower-case ones, requests and others either. */
function proxyEnvironment(): string[] {
  return ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"]
    .map((name) => `${name}=${EGRESS_PROXY_URL}`)
    .concat(["NO_PROXY=localhost,127.0.0.1", "no_proxy=localhost,127.0.0.1"]);
}
