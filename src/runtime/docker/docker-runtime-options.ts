/**
 * Settings of the docker runtime: one schema. The hardening that is not a choice (no
 * capabilities, no-new-privileges, not privileged, no bind mounts, memory without swap) is
 * not configurable and lives in container-spec.ts; what differs between deployments (engines,
 * networks, resource classes, the OCI runtime) is here.
 */
import { z } from "zod";
import { settingDocs } from "../../contract/setting-docs.js";

const MIB = 1024 * 1024;
export const DEFAULT_SOCKET_DIR = "/run/sandpool";
/** Linux caps a Unix socket's path at 107 bytes (sun_path is 108 with its NUL). */
const MAX_SOCKET_PATH_BYTES = 107;
/** What a sandbox's socket path adds to the socket directory: /<deployment>/<24 hex>/sandbox.sock. */
export const SANDBOX_SOCKET_NAME = "sandbox.sock";
const SANDBOX_ID_LENGTH = 24;
const positiveInt = z.number().int().min(1);
/** Docker's cpuset syntax: CPUs and ranges, comma-separated. */
const CPU_LIST = /^\d{1,4}(-\d{1,4})?(,\d{1,4}(-\d{1,4})?)*$/;
const rangesAscend = (list: string) =>
  list.split(",").every((item) => {
    const [from, to] = item.split("-").map(Number);
    return to === undefined || from! <= to;
  });
const labelSafeName = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, "use lower-case letters, digits, - and _ (at most 63)");

/** `unix:///path/to/docker.sock` or `tcp://host:port` (TLS with `tls`, else refused unless allowInsecureTcp). */
export const dockerHostSchema = z.string().refine((host) => parseDockerHost(host) !== undefined, {
  message: "a Docker endpoint is unix:///path/to/docker.sock or tcp://host:port",
});

/**
 * Client-certificate TLS to tcp:// engines, Docker's own way (`DOCKER_TLS_VERIFY` with
 * ca.pem, cert.pem and key.pem in `DOCKER_CERT_PATH`): the engine's certificate is verified
 * against `caFile` and its host name, and we present `certFile`/`keyFile`. PEM files, read
 * when the runtime starts.
 */
export const dockerTlsSchema = z.strictObject({
  caFile: z.string().min(1).register(settingDocs, {
    doc: "CA certificate the engine's certificate must chain to.",
    example: "/etc/sandpool/docker/ca.pem",
  }),
  certFile: z.string().min(1).register(settingDocs, {
    doc: "Client certificate presented to the engine.",
    example: "/etc/sandpool/docker/cert.pem",
  }),
  keyFile: z.string().min(1).register(settingDocs, {
    doc: "Key of the client certificate.",
    example: "/etc/sandpool/docker/key.pem",
  }),
});
export type DockerTlsFiles = z.output<typeof dockerTlsSchema>;

export const resourceClassSchema = z.strictObject({
  /** Hard memory limit; swap is never allowed on top of it (MemorySwap = Memory). */
  memoryBytes: z
    .number()
    .int()
    .min(16 * MIB),
  /** CPUs, fractional allowed: sent as NanoCpus (1 cpu = 1e9). */
  cpus: z.number().positive().max(1024),
  pidsLimit: positiveInt,
  /** Size cap of the workspace tmpfs (/home/sandbox/sessions); its pages count as memory. */
  tmpfsBytes: z.number().int().min(MIB),
  /** Size cap of the /tmp tmpfs; also counted as memory. */
  tmpBytes: z
    .number()
    .int()
    .min(MIB)
    .default(64 * MIB),
});

export const DEFAULT_RESOURCE_CLASSES = {
  standard: { memoryBytes: 512 * MIB, cpus: 1, pidsLimit: 256, tmpfsBytes: 256 * MIB, tmpBytes: 64 * MIB },
} as const;

/** The heavy imports of a data-analysis session; pyplot brings matplotlib (with Agg). */
export const DEFAULT_PRELOAD_MODULES = ["numpy", "pandas", "matplotlib.pyplot"] as const;

/**
 * What an operator configures under `runtime.docker`. The gateway adds the rest (the
 * deployment label and the policy's ceilings), so those keys are refused here rather than
 * silently overridden. The gateway's configuration validates with this schema, so a
 * misspelt key gets its did-you-mean at start-up like any other.
 */
export const dockerRuntimeSettingsSchema = z.strictObject({
  /** Docker endpoints; placement picks the least loaded one that has the image. */
  hosts: z
    .array(dockerHostSchema)
    .min(1)
    .default(() => dockerHostsFromEnv(process.env))
    .register(settingDocs, {
      doc: "Docker engines (unix:///path.sock or tcp://host:port); placement picks the least loaded. Default: DOCKER_HOST.",
      env: {
        name: "DOCKER_HOST",
        description: "Docker endpoint(s), comma-separated: unix:///path.sock or tcp://host:port",
      },
    }),
  /** TLS for every tcp:// engine; unix sockets ignore it. */
  tls: dockerTlsSchema.optional().register(settingDocs, {
    doc: "Verified TLS with a client certificate for tcp:// engines (Docker's ca.pem, cert.pem, key.pem). Default: DOCKER_TLS_VERIFY.",
    env: {
      name: "DOCKER_TLS_VERIFY",
      description:
        "true: reach tcp:// engines over verified TLS with ca.pem, cert.pem, key.pem of DOCKER_CERT_PATH (default ~/.docker)",
      landing: "dockerTlsVerify",
    },
  }),
  /**
   * Allow tcp:// engines without TLS. Off by default: the Docker API has no authentication of
   * its own, so whoever reaches a cleartext port is root on the engine's host.
   */
  allowInsecureTcp: z.boolean().default(false).register(settingDocs, {
    doc: "Allow tcp:// engines without TLS (whoever reaches that port is root on the engine's host).",
  }),
  /**
   * Sandboxes have no network (NetworkMode none): each gets its own directory below this one,
   * mounted at /run/sandpool, where its server listens on a Unix socket. The gateway and the
   * Docker engine must see this directory at the same path (the gateway runs on the engine's
   * host, or shares the directory with it at the same path: compose and Helm do).
   */
  socketDir: z
    .string()
    .startsWith("/", "socketDir is an absolute path")
    .default(DEFAULT_SOCKET_DIR)
    .register(settingDocs, {
      doc: "Sandboxes have no network; each listens on a Unix socket in its own directory below this one, which the gateway and the engine must see at the same path.",
    }),
  resourceClasses: z
    .record(labelSafeName, resourceClassSchema)
    .default(() => structuredClone(DEFAULT_RESOURCE_CLASSES) as Record<string, ResourceClassOutput>)
    .register(settingDocs, {
      doc: "Limits per resource class (memory, cpus, pids, tmpfs sizes); 'standard' is required.",
    }),
  readOnlyRootFilesystem: z
    .boolean()
    .default(true)
    .register(settingDocs, { doc: "Sandboxes' root filesystem is read-only." }),
  /**
   * The engine host's CPUs sandboxes may run on (HostConfig.CpusetCpus: `1-3`, `2,3`, `1-3,6`);
   * unset: all. Keeping them off the CPUs of the gateway and Redis keeps the control plane's
   * latency whatever the sandboxes' code burns: on a host they share, a lease waits behind
   * tenants' work for a CPU at every step (docs/deploying.md, "CPUs of the control plane's
   * own"). Each sandbox's `cpus` still caps its share within these.
   */
  sandboxCpus: z
    .string()
    .regex(CPU_LIST, "a list of CPUs and ranges, e.g. 1-3 or 2,3 or 1-3,6")
    .refine(rangesAscend, { message: "each range runs from a lower CPU to a higher one, e.g. 1-3" })
    .optional()
    .register(settingDocs, {
      doc: "The engine host's CPUs sandboxes run on (Docker's cpuset: 1-3, 2,3); unset: all. Leave the gateway's and Redis's CPUs out to keep the control plane's latency whatever tenants' code burns.",
      example: "1-3",
    }),
  /**
   * Numeric `uid:gid`; root is refused. Its gid is user code's group. User code's uid is one
   * of each sandbox's own (container-spec.ts: a process cap counts per uid across the host).
   */
  user: z
    .string()
    .regex(/^\d+:\d+$/, "user is numeric uid:gid")
    .refine((user) => !user.startsWith("0:"), { message: "sandboxes never run as root" })
    .default("10001:10001")
    .register(settingDocs, { doc: "Numeric uid:gid sandboxes run as; root is refused." }),
  /** OCI runtime (HostConfig.Runtime), e.g. `runsc` for gVisor; the engine's default if unset. */
  runtime: z.string().min(1).optional().register(settingDocs, {
    doc: "OCI runtime of container pools' sandboxes; unset: the engine's default (gVisor: pools[].isolation).",
    example: "runc",
  }),
  /**
   * The engine's name for gVisor (runsc), the OCI runtime of pools with `isolation: gvisor`.
   * The engine must have it registered (daemon.json `runtimes`; docs/isolation.md).
   */
  gvisorRuntime: z.string().min(1).default("runsc").register(settingDocs, {
    doc: "The engine's name for gVisor, the runtime of pools with isolation gvisor (docs/isolation.md).",
  }),
  /** Program (after the image's ENTRYPOINT) that starts the contract server; flags are appended. */
  serverCommand: z
    .array(z.string().min(1))
    .min(1)
    .default(["node", "/opt/sandpool/sandbox.mjs", "sandbox"])
    .register(settingDocs, {
      doc: "Program (after the image's ENTRYPOINT) that serves contract v1; flags are appended.",
    }),
  /**
   * Python modules every sandbox's session imports at warm-up, before the sandbox counts as
   * idle (`--preload-modules`), so a lease's first `import pandas` costs nothing. Images that
   * lack them (the lean one) skip them; an empty list turns preloading off.
   */
  preloadModules: z
    .array(z.string().regex(/^[A-Za-z_][\w.]*$/, "a Python module name"))
    .default(() => [...DEFAULT_PRELOAD_MODULES])
    .register(settingDocs, {
      doc: "Python modules each sandbox's session imports at warm-up, before it counts as idle (missing ones are skipped; [] turns it off).",
    }),
  /** The workspace root inside the container (a tmpfs). */
  sessionsRoot: z
    .string()
    .startsWith("/")
    .default("/home/sandbox/sessions")
    .register(settingDocs, { doc: "Where session workspaces live in the container (a tmpfs)." }),
  /** An engine that failed to answer is skipped in placement for this long. */
  engineDownMs: positiveInt
    .default(30_000)
    .register(settingDocs, { doc: "An engine that failed to answer is skipped this long." }),
  /** Socket timeout of one Docker API call. */
  engineRequestTimeoutMs: positiveInt
    .default(30_000)
    .register(settingDocs, { doc: "Socket timeout of one Docker API call." }),
  /** One readiness probe (GET /health) and the pause between probes. */
  healthProbeTimeoutMs: positiveInt
    .default(1_000)
    .register(settingDocs, { doc: "Timeout of one readiness probe of a new sandbox." }),
  healthProbeIntervalMs: positiveInt
    .default(50)
    .register(settingDocs, { doc: "Pause between readiness probes." }),
  /** json-file log cap: user code can write to PID 1's stdout, which would fill the disk. */
  logMaxBytes: positiveInt.default(MIB).register(settingDocs, {
    doc: "Container log cap (user code can write to PID 1's stdout, which would fill the disk).",
  }),
});

/** The folder of a runtime's sockets below the socket directory: the deployment's, or its owner's within it. */
export function socketNamespace(options: { deployment: string; owner?: string | undefined }): string {
  return options.owner === undefined ? options.deployment : `${options.deployment}/${options.owner}`;
}

export const dockerRuntimeOptionsSchema = dockerRuntimeSettingsSchema
  .extend({
    /** Value of the `sandpool.deployment` label: list() and reconciliation see only these. */
    deployment: labelSafeName,
    /**
     * Value of the `sandpool.owner` label (a node's): with it, list() and reconciliation see
     * only this owner's sandboxes of the deployment, and their sockets sit in a folder of its
     * own, so several nodes may share one engine without reaping each other's.
     */
    owner: labelSafeName.optional(),
    /** The sandbox server's own ceiling for timeout_seconds: at least the deployment's. */
    execTimeoutCeilingSeconds: positiveInt.default(600),
    maxFileBytes: positiveInt.default(100 * MIB),
  })
  .superRefine((options, ctx) => {
    for (const issue of cleartextEngineIssues(options)) ctx.addIssue(issue);
    if (!options.resourceClasses.standard)
      ctx.addIssue({
        code: "custom",
        message: "resource class 'standard' is required",
        path: ["resourceClasses"],
      });
    const longest = Buffer.byteLength(
      `${options.socketDir}/${socketNamespace(options)}/${"x".repeat(SANDBOX_ID_LENGTH)}/${SANDBOX_SOCKET_NAME}`,
    );
    if (longest > MAX_SOCKET_PATH_BYTES)
      ctx.addIssue({
        code: "custom",
        message: `sandbox sockets below it would be ${longest} bytes long, over Linux's ${MAX_SOCKET_PATH_BYTES}: choose a shorter directory`,
        path: ["socketDir"],
      });
  });

type ResourceClassOutput = z.output<typeof resourceClassSchema>;
export type ResourceClass = ResourceClassOutput;
export type DockerRuntimeOptionsInput = z.input<typeof dockerRuntimeOptionsSchema>;
export type DockerRuntimeOptions = z.output<typeof dockerRuntimeOptionsSchema>;

export type DockerHost = { kind: "unix"; socketPath: string } | { kind: "tcp"; host: string; port: number };

/**
 * The tcp:// engines that would be reached in cleartext: each one a refusal, unless the
 * configuration allows it explicitly. Shared by the gateway's configuration check and the
 * runtime's own options, so neither path can start a cleartext client by default.
 */
export function cleartextEngineIssues(settings: {
  hosts?: readonly string[];
  tls?: DockerTlsFiles;
  allowInsecureTcp?: boolean;
}): { code: "custom"; message: string; path: (string | number)[] }[] {
  if (settings.tls !== undefined || settings.allowInsecureTcp === true) return [];
  return (settings.hosts ?? []).flatMap((host, index) =>
    parseDockerHost(host)?.kind === "tcp"
      ? [
          {
            code: "custom" as const,
            path: ["hosts", index],
            message:
              `${host} would be reached without TLS, and whoever reaches a cleartext Docker port is root on its host: ` +
              "set runtime.docker.tls (or DOCKER_TLS_VERIFY=1 with DOCKER_CERT_PATH), or runtime.docker.allowInsecureTcp: true",
          },
        ]
      : [],
  );
}

/**
 * `unix:///var/run/docker.sock` or `tcp://host:port`; anything else is undefined. Without a
 * port, tcp:// means Docker's default: 2376 with TLS, 2375 without.
 */
export function parseDockerHost(value: string, options: { tls?: boolean } = {}): DockerHost | undefined {
  if (value.startsWith("unix://")) {
    const socketPath = value.slice("unix://".length);
    return socketPath.startsWith("/") ? { kind: "unix", socketPath } : undefined;
  }
  if (value.startsWith("tcp://")) {
    let url: URL;
    try {
      url = new URL(`http://${value.slice("tcp://".length)}`);
    } catch {
      return undefined;
    }
    if (url.pathname !== "/" || url.search || url.hash || url.username || url.password) return undefined;
    const port = url.port === "" ? (options.tls ? 2376 : 2375) : Number(url.port);
    // URL keeps IPv6 literals bracketed; the socket wants them bare.
    return { kind: "tcp", host: url.hostname.replace(/^\[(.*)\]$/, "$1"), port };
  }
  return undefined;
}

/** DOCKER_HOST (one endpoint, or several separated by commas), else the local socket. */
export function dockerHostsFromEnv(env: NodeJS.ProcessEnv): string[] {
  const hosts = (env.DOCKER_HOST ?? "")
    .split(",")
    .map((host) => host.trim())
    .filter((host) => host.length > 0);
  return hosts.length > 0 ? hosts : ["unix:///var/run/docker.sock"];
}
