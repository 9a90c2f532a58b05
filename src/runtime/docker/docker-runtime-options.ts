/**
 * Settings of the docker runtime: one schema. The hardening that is not a choice (no
 * capabilities, no-new-privileges, not privileged, no bind mounts, memory without swap) is
 * not configurable and lives in container-spec.ts; what differs between deployments (engines,
 * networks, resource classes, the OCI runtime) is here.
 */
import { z } from "zod";

const MIB = 1024 * 1024;
const positiveInt = z.number().int().min(1);
const labelSafeName = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, "use lower-case letters, digits, - and _ (at most 63)");
const networkName = z.string().regex(/^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,127}$/, "not a valid Docker network name");

/** `unix:///path/to/docker.sock` or `tcp://host:port` (plain HTTP; see README on TLS). */
export const dockerHostSchema = z.string().refine((host) => parseDockerHost(host) !== undefined, {
  message: "a Docker endpoint is unix:///path/to/docker.sock or tcp://host:port",
});

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
    .default(() => dockerHostsFromEnv(process.env)),
  /** The internal (no egress) bridge network; default `sandpool-<deployment>`. */
  network: networkName.optional(),
  /**
   * A non-internal network for pools marked `egress: true` (leased only to workspaces whose
   * policy allows egress); created on first use. Without it, egress pools cannot start.
   */
  egressNetwork: networkName.optional(),
  /**
   * False: the gateway reaches a container at its IP on the project network (it must run on
   * the engine's host or be attached to the network). True: port 8080 is published on
   * 127.0.0.1 only, on a random host port. Docker does not publish ports of containers that
   * are attached to an internal network only, so this works for egress pools alone.
   */
  publishToLoopback: z.boolean().default(false),
  resourceClasses: z
    .record(labelSafeName, resourceClassSchema)
    .default(() => structuredClone(DEFAULT_RESOURCE_CLASSES) as Record<string, ResourceClassOutput>),
  readOnlyRootFilesystem: z.boolean().default(true),
  /** Numeric `uid:gid`; root is refused. The tmpfs mounts are owned by it. */
  user: z
    .string()
    .regex(/^\d+:\d+$/, "user is numeric uid:gid")
    .refine((user) => !user.startsWith("0:"), { message: "sandboxes never run as root" })
    .default("10001:10001"),
  /** OCI runtime (HostConfig.Runtime), e.g. `runsc` for gVisor; the engine's default if unset. */
  runtime: z.string().min(1).optional(),
  /** Program (after the image's ENTRYPOINT) that starts the contract server; flags are appended. */
  serverCommand: z.array(z.string().min(1)).min(1).default(["node", "/opt/sandpool/sandbox.mjs", "sandbox"]),
  /** The server's port inside the container. */
  containerPort: z.number().int().min(1).max(65_535).default(8080),
  /** The workspace root inside the container (a tmpfs). */
  sessionsRoot: z.string().startsWith("/").default("/home/sandbox/sessions"),
  /** An engine that failed to answer is skipped in placement for this long. */
  engineDownMs: positiveInt.default(30_000),
  /** Socket timeout of one Docker API call. */
  engineRequestTimeoutMs: positiveInt.default(30_000),
  /** One readiness probe (GET /health) and the pause between probes. */
  healthProbeTimeoutMs: positiveInt.default(1_000),
  healthProbeIntervalMs: positiveInt.default(50),
  /** json-file log cap: user code can write to PID 1's stdout, which would fill the disk. */
  logMaxBytes: positiveInt.default(MIB),
});

export const dockerRuntimeOptionsSchema = dockerRuntimeSettingsSchema
  .extend({
    /** Value of the `sandpool.deployment` label: list() and reconciliation see only these. */
    deployment: labelSafeName,
    /** The sandbox server's own ceiling for timeout_seconds: at least the deployment's. */
    execTimeoutCeilingSeconds: positiveInt.default(600),
    maxFileBytes: positiveInt.default(100 * MIB),
  })
  .superRefine((options, ctx) => {
    if (!options.resourceClasses.standard)
      ctx.addIssue({
        code: "custom",
        message: "resource class 'standard' is required",
        path: ["resourceClasses"],
      });
    const internal = options.network ?? `sandpool-${options.deployment}`;
    if (options.egressNetwork && options.egressNetwork === internal)
      ctx.addIssue({
        code: "custom",
        message: "egressNetwork must differ from the internal network",
        path: ["egressNetwork"],
      });
  })
  .transform((options) => ({ ...options, network: options.network ?? `sandpool-${options.deployment}` }));

type ResourceClassOutput = z.output<typeof resourceClassSchema>;
export type ResourceClass = ResourceClassOutput;
export type DockerRuntimeOptionsInput = z.input<typeof dockerRuntimeOptionsSchema>;
export type DockerRuntimeOptions = z.output<typeof dockerRuntimeOptionsSchema>;

export type DockerHost = { kind: "unix"; socketPath: string } | { kind: "tcp"; host: string; port: number };

/** `unix:///var/run/docker.sock` or `tcp://host:port`; anything else is undefined. */
export function parseDockerHost(value: string): DockerHost | undefined {
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
    const port = url.port === "" ? 2375 : Number(url.port);
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
