/**
 * The create-container body for one sandbox. Everything that keeps user code in its box is
 * decided here, in one place, so it can be read (and reviewed) as a whole:
 * no capabilities but the two the server needs to drop to the code's uid, no-new-privileges, never privileged, no bind mounts or volumes (so never
 * the Docker socket), a read-only root with size-capped tmpfs for the workspace and /tmp,
 * memory without swap, a pids cap, CPU quota, capped container logs, and no network at all:
 * the one mount is the sandbox's own socket directory, where its server listens on a Unix
 * socket for the gateway (and, for an egress sandbox whose proxy adds credentials, one file
 * of it again, read-only, as OpenSSL's default CA file). Nothing in the box can open a
 * connection to anything outside it.
 *
 * User code runs under a uid of its own, one per sandbox (codeUidOf), never as the server:
 * the container starts as root with CAP_SETUID and CAP_SETGID alone (and no-new-privileges),
 * and the server keeps root only as its real uid, works as the code's uid, and starts every
 * program as it with setpriv, capped below the pids limit (src/sandbox/user-code/code-user.ts).
 */
import { createHash } from "node:crypto";
import type { ContainerCreateOptions, HostConfig } from "dockerode";
import type { Isolation } from "../../policy-schema/isolation-levels.js";
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
/**
 * The deployment's egress CA, and the system roots with it, written by the gateway in the
 * sandbox's directory (sandbox-trust-files.ts): the gateway's files, read-only to the box.
 */
export const EGRESS_CA_NAME = "ca.pem";
export const EGRESS_CA_BUNDLE_NAME = "ca-bundle.pem";
const EGRESS_PROXY_URL = "http://127.0.0.1:3128";

export const LABELS = {
  deployment: "sandpool.deployment",
  owner: "sandpool.owner",
  egress: "sandpool.egress",
  pool: "sandpool.pool",
  sandbox: "sandpool.sandbox",
  engine: "sandpool.engine",
  resourceClass: "sandpool.resource-class",
  isolation: "sandpool.isolation",
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
  /** The egress CA files are in its directory: programs are told to trust them. */
  egressTrust?: boolean;
  /** `gvisor`: the container runs on runtime.docker.gvisorRuntime, else on runtime.docker.runtime. */
  isolation?: Isolation;
}

/**
 * User code's uids: one per sandbox, because RLIMIT_NPROC counts a uid's processes across
 * the whole host, not per container (a shared uid would let one sandbox's processes use up
 * another's cap). Drawn from [2^20, 2^20 + 2^30): above host accounts, systemd's dynamic
 * users and the usual subordinate-uid ranges (100000-165535), below 2^31 for programs that
 * keep a uid in a signed int. Two sandboxes on one host share one with a chance of about
 * n^2 / 2^31 for n sandboxes (0.05% for 1000): they would then share a process cap, nothing
 * else (no file or process of one is visible to the other).
 */
export const CODE_UID_BASE = 2 ** 20;
export const CODE_UID_SPAN = 2 ** 30;

export function codeUidOf(sandboxId: string, avoid = process.getuid?.()): number {
  const hash = createHash("sha256").update(sandboxId).digest().readUInt32BE(0);
  const uid = CODE_UID_BASE + (hash % CODE_UID_SPAN);
  // Never the gateway's own uid: it owns the sealed socket directories.
  return uid === avoid ? CODE_UID_BASE + ((hash + 1) % CODE_UID_SPAN) : uid;
}

/**
 * Processes (threads included) kept for the server out of the container's pids limit: its
 * node threads (about a dozen), tini, and the programs it is starting. User code's cap is
 * the rest, so however many it holds, the server can still answer and start the next call.
 */
const SERVER_PIDS_RESERVE = 32;

export function codeMaxProcesses(pidsLimit: number): number {
  return Math.max(1, pidsLimit - Math.min(SERVER_PIDS_RESERVE, Math.floor(pidsLimit / 2)));
}

export function containerName(deployment: string, sandboxId: string): string {
  // Docker names: [a-zA-Z0-9][a-zA-Z0-9_.-]*; the sandbox id is ours, but never trust a format.
  const safe = sandboxId.replace(/[^a-zA-Z0-9_.-]/g, "_").slice(0, 100);
  return `sandpool-${deployment}-${safe}`;
}

/** Docker API 1.41 fields that @types/dockerode does not declare. */
type FullHostConfig = HostConfig & { CgroupnsMode?: "private" | "host" };

/** Who user code runs as: the sandbox's own uid, and runtime.docker.user's gid. */
function codeUserOf(options: DockerRuntimeOptions, input: ContainerSpecInput): { uid: number; gid: number } {
  return { uid: codeUidOf(input.sandboxId), gid: Number(options.user.split(":")[1]) };
}

/** A read-only root's writable places besides the sessions' root: tmpfs /tmp, /dev/shm and POSIX queues. */
const SCRUB_DIRS = ["/tmp", "/dev/shm", "/dev/mqueue"];

export function buildContainerSpec(
  options: DockerRuntimeOptions,
  input: ContainerSpecInput,
): ContainerCreateOptions {
  const code = codeUserOf(options, input);
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
      // What user code can write besides the sessions' root, emptied when the sandbox is recycled.
      ...(options.readOnlyRootFilesystem ? ["--scrub-dirs", SCRUB_DIRS.join(",")] : []),
      ...["--code-user", `${code.uid}:${code.gid}`],
      ...["--code-max-processes", String(codeMaxProcesses(input.resourceClass.pidsLimit))],
      ...(options.preloadModules.length > 0 ? ["--preload-modules", options.preloadModules.join(",")] : []),
      ...(input.egress ? ["--egress-proxy-socket", `${SOCKET_MOUNT}/${EGRESS_SOCKET_NAME}`] : []),
    ],
    Env: [
      "SANDPOOL_LOG_LEVEL=warn",
      ...(input.egress ? proxyEnvironment() : []),
      ...(input.egress && input.egressTrust ? trustEnvironment() : []),
    ],
    // Root only to start: the server drops to the code's uid at once (see the file's comment).
    User: "0:0",
    Hostname: "sandbox",
    Labels: {
      [LABELS.deployment]: options.deployment,
      ...(options.owner === undefined ? {} : { [LABELS.owner]: options.owner }),
      [LABELS.pool]: input.pool,
      [LABELS.sandbox]: input.sandboxId,
      [LABELS.engine]: input.engineHost,
      [LABELS.resourceClass]: input.resourceClassName,
      [LABELS.isolation]: input.isolation ?? "container",
      ...(input.egress ? { [LABELS.egress]: "true" } : {}),
    },
    // The gateway probes readiness itself; a health check would only spend CPU in the box.
    Healthcheck: { Test: ["NONE"] },
    StopTimeout: 2,
    HostConfig: buildHostConfig(options, input),
  };
}

function buildHostConfig(options: DockerRuntimeOptions, input: ContainerSpecInput): FullHostConfig {
  const { uid, gid } = codeUserOf(options, input);
  const rc = input.resourceClass;
  const ownedTmpfs = `uid=${uid},gid=${gid}`;
  return {
    Privileged: false,
    CapDrop: ["ALL"],
    // For the server to take the code's uid and gid; no process of user code ever holds them.
    CapAdd: ["SETUID", "SETGID"],
    SecurityOpt: ["no-new-privileges"],
    ReadonlyRootfs: options.readOnlyRootFilesystem,
    // Always tmpfs, even with a writable root: the overlay has no size cap of its own.
    Tmpfs: {
      [options.sessionsRoot]: `rw,nosuid,nodev,exec,size=${rc.tmpfsBytes},${ownedTmpfs},mode=0700`,
      "/tmp": `rw,nosuid,nodev,noexec,size=${rc.tmpBytes},${ownedTmpfs},mode=1777`,
    },
    Binds: [],
    Mounts: [
      { Type: "bind", Source: input.socketDir, Target: SOCKET_MOUNT, ReadOnly: false },
      ...(input.egress && input.egressTrust ? [systemStoreMount(input.socketDir)] : []),
    ],
    Init: false,
    Memory: rc.memoryBytes,
    MemorySwap: rc.memoryBytes,
    NanoCpus: Math.round(rc.cpus * 1e9),
    ...(options.sandboxCpus === undefined ? {} : { CpusetCpus: options.sandboxCpus }),
    PidsLimit: hostPidsLimit(rc.pidsLimit, input.isolation),
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
    ...runtimeOf(options, input.isolation),
  };
}

/**
 * Host tasks a gVisor sandbox may hold per task of its own. On gVisor's ptrace platform every
 * process inside is a stub process on the host with tracing threads, besides the sentry's own
 * threads: 48 processes and 150 threads inside hold about 4x as many on the host, and a sentry
 * that cannot make a thread ends the whole sandbox. The limit inside stays the resource class's
 * (user code's RLIMIT_NPROC, which gVisor enforces); this one only keeps the host safe (a fork
 * bomb still ends its gVisor sandbox: stubs outlive the processes they served; docs/isolation.md).
 */
export const GVISOR_HOST_PIDS_PER_TASK = 4;

function hostPidsLimit(pidsLimit: number, isolation: Isolation | undefined): number {
  return isolation === "gvisor" ? pidsLimit * GVISOR_HOST_PIDS_PER_TASK : pidsLimit;
}

/** The OCI runtime: gVisor's for a gvisor pool (every setting above holds there too), else the configured one. */
function runtimeOf(options: DockerRuntimeOptions, isolation: Isolation | undefined): { Runtime?: string } {
  if (isolation === "gvisor") return { Runtime: options.gvisorRuntime };
  return options.runtime ? { Runtime: options.runtime } : {};
}

/** Both spellings: curl and pip read the lower-case ones, requests and others either. */
function proxyEnvironment(): string[] {
  return ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"]
    .map((name) => `${name}=${EGRESS_PROXY_URL}`)
    .concat(["NO_PROXY=localhost,127.0.0.1", "no_proxy=localhost,127.0.0.1"]);
}

/**
 * OpenSSL's default CA file (OPENSSLDIR/cert.pem; Debian links it to ca-certificates.crt,
 * which the mount then covers) becomes the bundle, read-only. The variables below are not
 * enough: user code runs with AT_SECURE set (started by a server whose real uid is root),
 * where OpenSSL's secure_getenv ignores SSL_CERT_FILE, so Python's default context
 * (urllib, ssl) would never see the CA. Not a new way in: a file of the sandbox's own
 * gateway-owned directory, mounted again read-only.
 */
export const OPENSSL_DEFAULT_CA_FILE = "/usr/lib/ssl/cert.pem";

function systemStoreMount(socketDir: string) {
  return {
    Type: "bind" as const,
    Source: `${socketDir}/${EGRESS_CA_BUNDLE_NAME}`,
    Target: OPENSSL_DEFAULT_CA_FILE,
    ReadOnly: true,
  };
}

/**
 * The bundle (system roots + the deployment's egress CA) for OpenSSL-based clients: Python's
 * ssl default paths, urllib, pip and curl honour SSL_CERT_FILE, requests REQUESTS_CA_BUNDLE,
 * curl CURL_CA_BUNDLE; node adds NODE_EXTRA_CA_CERTS to its own roots.
 */
function trustEnvironment(): string[] {
  const bundle = `${SOCKET_MOUNT}/${EGRESS_CA_BUNDLE_NAME}`;
  return [
    `SSL_CERT_FILE=${bundle}`,
    `REQUESTS_CA_BUNDLE=${bundle}`,
    `CURL_CA_BUNDLE=${bundle}`,
    `NODE_EXTRA_CA_CERTS=${SOCKET_MOUNT}/${EGRESS_CA_NAME}`,
  ];
}
