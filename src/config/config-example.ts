/**
 * `sandpool config example`: a complete, commented configuration file. It is rendered from the
 * schema itself (key order, which keys are required, every default), so it cannot drift from
 * what the loader accepts; only the one-line comments and the placeholder values of settings
 * without a default are written here. Optional settings are shown commented out with their
 * default; required ones are active, so the file loads as it is.
 */
import { stringify } from "yaml";
import type { z } from "zod";
import { formatKeyPath, unwrap } from "../contract/did-you-mean.js";
import { configEnvVariables } from "./config-env.js";
import { gatewayConfigSchema } from "./gateway-config.js";

interface FieldDoc {
  comment: string;
  /** Shown for a setting without a default (and used for a required one). */
  example?: unknown;
  /** Active in the example although optional (the one auth key source, so the file loads). */
  active?: boolean;
}

const EXAMPLE_IMAGE = "sandpool/sandbox:dev";

/** Keyed by config path; `[]` stands for every item of a list. */
export const fieldDocs: Readonly<Record<string, FieldDoc>> = {
  role: {
    comment:
      "What this process is. One host runs all (gateway and sandboxes); scaled out, stateless edges route to one node per sandbox host.",
  },
  node: { comment: "The node API (role node) and the secrets edges and nodes authenticate each other with." },
  "node.host": { comment: "Address of the node API listener (role node)." },
  "node.port": { comment: "Port of the node API listener (role node); edges only need to reach it." },
  "node.advertiseUrl": {
    comment: "URL edges reach this node's API at (required for role node).",
    example: "http://10.0.0.5:8091",
  },
  "node.id": { comment: "This node's id in the registry; unset: the host name.", example: "sandbox-host-1" },
  "node.secrets": {
    comment:
      "Shared secrets (32 bytes or more): the first signs, every one verifies. Rotate: add the new one second, move it first, drop the old.",
    example: ["change-me-to-32-bytes-or-more-0123456789"],
  },
  "node.heartbeatMs": { comment: "How often a node renews its registry entry." },
  "node.lostAfterMs": { comment: "A node silent this long is lost: its sessions end (node_lost)." },
  "node.clockWindowMs": {
    comment: "Signed requests further than this from the receiver's clock are refused.",
  },
  "node.headersTimeoutMs": { comment: "A node API request whose headers take longer is cut (role node)." },
  "node.bodyTimeoutMs": {
    comment: "A signed request's buffered body (a lease, an Execute) must arrive within this.",
  },
  "node.requestTimeoutMs": {
    comment: "A whole node API request, an upload included, must arrive within this.",
  },
  "node.maxConnections": {
    comment: "Connections the node API holds open at once; more are closed as they come.",
  },
  host: { comment: "Address the gateway listens on (0.0.0.0 for every interface)." },
  port: { comment: "Port the gateway listens on; 0 picks a free one." },
  adminListener: {
    comment:
      "Serve the admin API (/admin/v1) on a listener of its own; the public one then answers its paths as unknown.",
  },
  "adminListener.host": { comment: "Address of the admin listener (keep it private)." },
  "adminListener.port": { comment: "Port of the admin listener; must differ from port." },
  basePath: { comment: "The contract is served at / and also under this path, e.g. /v1/sandbox." },
  deployment: { comment: "Label of every sandbox this deployment starts, so reconciliation knows its own." },
  auth: { comment: "How bearer tokens are verified. Configure exactly one key source." },
  "auth.jwtSecret": {
    comment: "Key source: an HS256 shared secret of 32 bytes or more.",
    example: "change-me-to-32-bytes-or-more-0123456789",
  },
  "auth.jwtPublicKey": {
    comment: "Key source: a PEM (SPKI) public key, RSA, EC or Ed25519, or a public JWK as JSON.",
    example: "-----BEGIN PUBLIC KEY-----\n...\n-----END PUBLIC KEY-----\n",
  },
  "auth.jwksUrl": {
    comment: "Key source: the JWKS URL of your identity provider; https (plain http only to loopback).",
    example: "https://issuer.example/.well-known/jwks.json",
    active: true,
  },
  "auth.algorithms": {
    comment: "Accepted JWS algorithms; derived from the key source when unset (never none).",
    example: ["RS256", "ES256"],
  },
  "auth.issuer": {
    comment: "Required iss claim; not checked when unset.",
    example: "https://issuer.example/",
  },
  "auth.audience": {
    comment: "Required aud claim; sandpool serve refuses to start without it unless anyAudience is true.",
    example: "sandpool",
    active: true,
  },
  "auth.anyAudience": {
    comment:
      "Accept any aud claim (no audience check); only if every token of the issuer is meant for sandpool.",
  },
  "auth.maxTokenAgeSeconds": {
    comment: "Refuse tokens issued (iat) longer ago than this, or without iat; unset: exp alone decides.",
    example: 86400,
  },
  "auth.clockToleranceSeconds": { comment: "Clock skew allowed when checking exp and nbf, in seconds." },
  "auth.workspaceClaim": {
    comment: "Claim holding the workspace id; a dotted path reaches into an object claim.",
  },
  "auth.adminClaim": {
    comment:
      "Claim that makes a token an admin token (admin API) when it is true; its workspace is then optional.",
  },
  "auth.jwksCooldownMs": {
    comment: "Least time between two JWKS fetches, so unknown kids cannot hammer the issuer.",
  },
  "auth.jwksCacheMaxAgeMs": { comment: "A fetched JWKS is trusted this long before it is refreshed." },
  "auth.jwksTimeoutMs": { comment: "A slower JWKS fetch fails the request (401) instead of holding it." },
  "auth.introspection": {
    comment:
      "Opaque (non-JWT) bearer tokens checked at your platform's RFC 7662 introspection endpoint. Order: sp_ keys, then JWTs, then this.",
  },
  "auth.introspection.url": {
    comment:
      "The introspection endpoint; https (plain http only to loopback). Env SANDPOOL_INTROSPECTION_URL.",
    example: "https://platform.example/oauth/introspect",
  },
  "auth.introspection.clientId": {
    comment: "Client id sent as HTTP Basic credentials. Env SANDPOOL_INTROSPECTION_CLIENT_ID.",
    example: "sandpool",
  },
  "auth.introspection.clientSecret": {
    comment: "Client secret sent as HTTP Basic credentials. Env SANDPOOL_INTROSPECTION_CLIENT_SECRET.",
    example: "change-me",
  },
  "auth.introspection.workspaceField": {
    comment: "Field of the answer holding the workspace id; a dotted path reaches into an object.",
  },
  "auth.introspection.cacheSeconds": {
    comment: "An active answer is reused this long, never past its exp; 0: ask on every call.",
  },
  "auth.introspection.refusalCacheSeconds": {
    comment: "A refusal (inactive, no workspace) is reused this long.",
  },
  "auth.introspection.timeoutMs": {
    comment:
      "A slower endpoint fails the call with 503 auth.introspection_unavailable (never a default tenant).",
  },
  "auth.introspection.audience": {
    comment:
      "The aud an active answer must name; sandpool serve refuses to start without it (or allowedClientIds) unless anyAudience is true. Env SANDPOOL_INTROSPECTION_AUDIENCE.",
    example: "sandpool",
  },
  "auth.introspection.allowedClientIds": {
    comment:
      "The client_ids an active answer may name (the clients tokens meant for sandpool are issued to). Env SANDPOOL_INTROSPECTION_ALLOWED_CLIENT_IDS.",
    example: ["agent-runner"],
  },
  "auth.introspection.anyAudience": {
    comment:
      "Accept every active token of the server, whatever its aud and client_id; only if all of them are meant for sandpool.",
  },
  "auth.apiKeyCacheSeconds": {
    comment:
      "A workspace API key's record is reused this long; revocations reach every replica at once by pub/sub.",
  },
  "auth.apiKeyLastUsedFlushMs": {
    comment: "How often API keys' last use is written (batched, not per call).",
  },
  "auth.verifiedTokenCacheSeconds": {
    comment:
      "A verified token is trusted again this long (never past exp) without a signature check; 0: never.",
  },
  policy: {
    comment: "Deployment policy: ceilings no workspace can exceed, and what applies without a policy row.",
  },
  "policy.allowedImages": {
    comment: "Images sessions may use; each needs a pool in policy.resourceClass.",
    example: [EXAMPLE_IMAGE],
  },
  "policy.defaultImage": {
    comment: "Image of a session that names none; one of allowedImages.",
    example: EXAMPLE_IMAGE,
  },
  "policy.allowedTools": { comment: "Tool kinds sessions may call." },
  "policy.execTimeoutCeilingSeconds": { comment: "Ceiling of an execution's timeout_seconds." },
  "policy.defaultExecTimeoutSeconds": { comment: "The timeout_seconds of a call that sends none." },
  "policy.idleTimeoutCeilingSeconds": { comment: "Ceiling of a session's idle timeout, in seconds." },
  "policy.maxLifetimeCeilingSeconds": { comment: "Ceiling of a session's lifetime, in seconds." },
  "policy.defaultIdleTimeoutSeconds": { comment: "Idle timeout of a session whose client asks for none." },
  "policy.defaultMaxLifetimeSeconds": { comment: "Lifetime of a session whose client asks for none." },
  "policy.maxConcurrentSessions": { comment: "Open sessions per workspace." },
  "policy.sessionsPerMinute": { comment: "New sessions per workspace per minute." },
  "policy.execSecondsPerDay": { comment: "Execution seconds per workspace per day." },
  "policy.maxFileBytes": { comment: "Largest file a session may upload or download, in bytes." },
  "policy.resourceClass": { comment: "Resource class of the sandboxes sessions get." },
  "policy.isolation": {
    comment:
      "The least isolation of every workspace's sandboxes (a workspace may raise it): gvisor leases only gvisor pools.",
  },
  "policy.egressAllowed": { comment: "Whether sandboxes may reach the network." },
  "policy.egressAllowCidrs": {
    comment:
      "Ranges egress may reach although denied by default (private, loopback, ...); a workspace may only narrow them.",
  },
  "policy.egressAllowHosts": {
    comment: "When set, the only host names egress may reach (pypi.org, *.pythonhosted.org); empty: any.",
  },
  "policy.sandboxReuse": {
    comment:
      "A session's sandbox, scrubbed, serves its workspace's next session instead of a container start; a workspace may turn it off.",
  },
  pools: { comment: "Warm pools, one per image and resource class; every allowed image needs one." },
  "pools[].name": {
    comment: "Pool name (lower-case letters, digits, - and _), a label on its containers.",
    example: "default",
  },
  "pools[].image": { comment: "The image its sandboxes run.", example: EXAMPLE_IMAGE },
  "pools[].resourceClass": { comment: "Resource class of its sandboxes." },
  "pools[].minIdle": { comment: "Ready sandboxes kept warm." },
  "pools[].maxTotal": { comment: "Most sandboxes at once, leased and idle together." },
  "pools[].warmupConcurrency": { comment: "Sandboxes started at once while warming up." },
  "pools[].coldStartTimeoutMs": { comment: "Deadline of a cold start when the pool is dry." },
  "pools[].egress": {
    comment:
      "Sandboxes with egress through the gateway's filtering proxy (egress.*), leased only where policy allows it.",
  },
  "pools[].demand": {
    comment:
      "Keep more than minIdle ready while the deployment leases faster than the pool refills (lease rate x p95 refill time, up to maxTotal).",
  },
  "pools[].isolation": {
    comment:
      "container (the engine's default runtime) or gvisor (a user-space kernel between user code and the host's; docs/isolation.md).",
  },
  limits: { comment: "Request limits." },
  "limits.maxJsonBodyBytes": { comment: "Largest JSON request body; larger ones get 413." },
  "limits.execDeadlineBufferMs": {
    comment: "Added to timeout_seconds for the deadline of an execution call.",
  },
  "limits.sandboxRequestTimeoutMs": { comment: "Deadline of every other call to a sandbox." },
  "limits.maxSandboxAnswerBytes": {
    comment:
      "Most bytes of a sandbox's Execute or PutFile answer the gateway reads; a larger Execute answer becomes a 200 saying the output was dropped.",
  },
  "limits.maxSandboxErrorBytes": {
    comment: "Most bytes of a sandbox's error answer the gateway reads; more is 502 sandbox.bad_answer.",
  },
  "limits.maxBufferedAnswerBytes": {
    comment:
      "Most bytes of sandbox answers read into memory at once, all calls together; further reads wait their turn.",
  },
  "limits.headerReadTimeoutMs": {
    comment:
      "A request's whole header block must arrive within this (slower clients get 408 and are cut off).",
  },
  "limits.bodyReadTimeoutMs": {
    comment:
      "A request body that sends nothing this long while the gateway is reading it is cut off (per read, not per body).",
  },
  "limits.maxUnauthenticatedRequests": {
    comment:
      "Requests in flight not yet past authentication (/metrics too); more get 503 request.busy. /healthz and /readyz never count.",
  },
  "limits.writeStallTimeoutMs": {
    comment:
      "A client whose answer stays unread this long (writes backed up) is cut off, and the answer's memory freed.",
  },
  "limits.maxWarmupStarts": {
    comment:
      "Warm-up sandbox starts in flight at once per replica, all pools together; unset: the machine's CPU count. Cold starts never wait for it.",
    example: 4,
  },
  "limits.maxCallsInFlightPerWorkspace": {
    comment:
      "Contract calls of one workspace in flight at once, per replica (N replicas admit up to N times it); more get 429.",
  },
  http: {
    comment:
      "Host and Origin checks (403). Loopback names and IP addresses are always answered; loopback origins always pass.",
  },
  "http.allowedHosts": {
    comment:
      'Other Host names answered: exact names, ".example.com" for a domain and its subdomains, "*" for any Host.',
  },
  "http.allowedOrigins": {
    comment:
      'Browser origins allowed (exact scheme://host[:port], or "*"); requests without Origin (Otari) always pass.',
  },
  intervals: { comment: "Periods of the background jobs." },
  "intervals.warmMs": { comment: "How often pools are topped up to minIdle." },
  "intervals.reapMs": { comment: "How often idle and expired sessions are ended." },
  "intervals.cpuMeterMs": {
    comment:
      "How often every leased sandbox's CPU is read and charged to its workspace's day; a spent day's sandboxes that still run code are stopped within about one period.",
  },
  "intervals.reconcileMs": { comment: "How often the runtime's containers are compared with the store." },
  "intervals.orphanGraceMs": {
    comment: "How old a sandbox nobody knows must be before it is destroyed as an orphan.",
  },
  authFailures: { comment: "Failed authentications allowed per credential fingerprint before 429." },
  metrics: {
    comment:
      "Who may read /metrics (here and on nodes): anyone who reaches the port, or with a token only Authorization: Bearer <token>.",
  },
  hibernate: {
    comment: "Where hibernated sessions' checkpoints are kept (their memory and files): docs/hibernate.md.",
  },
  "hibernate.checkpointDir": {
    comment:
      "The checkpoint store's root, mode 0700, a directory per workspace; local to this node unless shared.",
  },
  "hibernate.shared": {
    comment:
      "true when every node mounts the same checkpointDir (a ReadWriteMany volume): sessions may resume on any node.",
  },
  "hibernate.maxStoreBytes": {
    comment:
      "Bytes the checkpoint store may hold, every workspace's checkpoints together; at it, hibernation is refused (503 capacity.checkpoint_space) and the session keeps running.",
  },
  "hibernate.minFreeBytes": {
    comment:
      "Free bytes the checkpoint store's disk must keep; below them, hibernation is refused likewise (0: no floor).",
  },
  "metrics.token": {
    comment: "The bearer token /metrics requires, 32 bytes or more. Env SANDPOOL_METRICS_TOKEN.",
    example: "change-me-to-32-bytes-or-more-0123456789",
  },
  "metrics.tokenFile": {
    comment:
      "A file holding that token instead (a mounted secret), read at start-up. Env SANDPOOL_METRICS_TOKEN_FILE.",
    example: "/run/secrets/sandpool-metrics-token",
  },
  "authFailures.maxFailures": { comment: "Failures allowed within the window." },
  "authFailures.windowMs": { comment: "The window, in milliseconds." },
  retention: {
    comment:
      "How long raw usage and audit rows are kept; a scheduled job rolls usage up per UTC day (kept for good) and prunes.",
  },
  "retention.usageEventsDays": {
    comment:
      "Raw usage events older than this many days are deleted once rolled up (hourly reports need them; daily ones read the rollup).",
  },
  "retention.auditDays": {
    comment: "Policy, API key and admin audit rows older than this many days are deleted.",
  },
  "retention.intervalMs": { comment: "How often the rollup and pruning job runs, once across all replicas." },
  usageBacklog: {
    comment:
      "Billing usage waits in the coordination store (Redis) until a replica's drainer writes it to Postgres: nothing is lost while Postgres is away.",
  },
  "usageBacklog.drainMs": { comment: "How often each replica drains the usage backlog to Postgres." },
  "usageBacklog.notReadyAbove": {
    comment: "Records waiting past which /readyz answers not ready (Postgres is not keeping up).",
  },
  "usageBacklog.journalDir": {
    comment:
      "Where `sandpool serve` journals each call's usage record before answering, for another replica to replay if this one dies (default: <OS temp dir>/sandpool-usage-journal/<deployment>). Use a volume that outlives the container (e.g. an emptyDir); a machine crash may lose what the kernel had not yet written.",
    example: "/var/lib/sandpool/usage-journal",
  },
  "usageBacklog.journalReplayAfterMs": {
    comment:
      "A journal segment nobody has written to for this long is left behind: any replica replays it into the backlog.",
  },
  policyCacheTtlMs: { comment: "How long a workspace policy is cached; edits also invalidate it at once." },
  egress: {
    comment:
      "The filtering proxy of egress pools: loopback, private, link-local, ULA and the host are refused unless a grant allows them.",
  },
  "egress.denyCidrs": {
    comment: "Ranges refused whatever a workspace allows, e.g. the cluster's pod and service ranges.",
  },
  "egress.allowPorts": { comment: "When non-empty, the only destination ports allowed (e.g. [80, 443])." },
  "egress.maxTunnelsPerSandbox": { comment: "Connections through the proxy one sandbox may hold open." },
  "egress.connectTimeoutMs": { comment: "Deadline of resolving and connecting to a destination." },
  "egress.idleTimeoutMs": { comment: "A connection idle this long in both directions is closed." },
  databaseUrl: {
    comment: "Postgres URL for policy, usage and audit; required by sandpool serve (dev mode uses PGlite).",
    example: "postgres://sandpool:change-me@postgres:5432/sandpool",
  },
  redisUrl: {
    comment:
      "Redis URL of one server for coordination and jobs (rediss:// for TLS); sandpool serve needs this or redis.sentinels or redis.cluster (dev mode keeps state in memory).",
    example: "redis://redis:6379",
  },
  redis: {
    comment:
      "Redis through Sentinel (sentinels, sentinelName) or as a Cluster (cluster.nodes) instead of redisUrl; set one of the three.",
  },
  "redis.sentinels": {
    comment: "Sentinels to ask where the master is (host:port); failovers are followed.",
    example: ["sentinel-1:26379", "sentinel-2:26379", "sentinel-3:26379"],
  },
  "redis.sentinelName": { comment: "Master name the Sentinels monitor.", example: "mymaster" },
  "redis.sentinelPassword": {
    comment: "Password of the Sentinels themselves, when they require one.",
    example: "change-me",
  },
  "redis.cluster": { comment: "A Redis Cluster: sandpool's keys are hash-tagged per workspace or pool." },
  "redis.cluster.nodes": {
    comment: "Seed nodes (host:port); the others are discovered.",
    example: ["redis-0:6379", "redis-1:6379", "redis-2:6379"],
  },
  "redis.username": {
    comment: "ACL user of the Sentinel master or of every Cluster node.",
    example: "sandpool",
  },
  "redis.password": {
    comment: "Password of the Sentinel master or of every Cluster node.",
    example: "change-me",
  },
  "redis.tls": { comment: "TLS to every Sentinel and node.", example: false },
  runtime: { comment: "Where sandboxes run." },
  "runtime.kind": {
    comment: "docker (isolated containers) or process (child processes, dev only, NOT isolated).",
  },
  "runtime.docker": {
    comment: "Options of the docker runtime (engines, socket directory, resource classes).",
  },
  "runtime.docker.hosts": {
    comment:
      "Docker engines (unix:///path.sock or tcp://host:port); placement picks the least loaded. Default: DOCKER_HOST.",
  },
  "runtime.docker.tls": {
    comment:
      "Verified TLS with a client certificate for tcp:// engines (Docker's ca.pem, cert.pem, key.pem). Default: DOCKER_TLS_VERIFY.",
  },
  "runtime.docker.tls.caFile": {
    comment: "CA certificate the engine's certificate must chain to.",
    example: "/etc/sandpool/docker/ca.pem",
  },
  "runtime.docker.tls.certFile": {
    comment: "Client certificate presented to the engine.",
    example: "/etc/sandpool/docker/cert.pem",
  },
  "runtime.docker.tls.keyFile": {
    comment: "Key of the client certificate.",
    example: "/etc/sandpool/docker/key.pem",
  },
  "runtime.docker.allowInsecureTcp": {
    comment: "Allow tcp:// engines without TLS (whoever reaches that port is root on the engine's host).",
  },
  "runtime.docker.socketDir": {
    comment:
      "Sandboxes have no network; each listens on a Unix socket in its own directory below this one, which the gateway and the engine must see at the same path.",
  },
  "runtime.docker.resourceClasses": {
    comment: "Limits per resource class (memory, cpus, pids, tmpfs sizes); 'standard' is required.",
  },
  "runtime.docker.readOnlyRootFilesystem": { comment: "Sandboxes' root filesystem is read-only." },
  "runtime.docker.sandboxCpus": {
    comment:
      "The engine host's CPUs sandboxes run on (Docker's cpuset: 1-3, 2,3); unset: all. Leave the gateway's and Redis's CPUs out to keep the control plane's latency whatever tenants' code burns.",
    example: "1-3",
  },
  "runtime.docker.user": { comment: "Numeric uid:gid sandboxes run as; root is refused." },
  "runtime.docker.runtime": {
    comment:
      "OCI runtime of container pools' sandboxes; unset: the engine's default (gVisor: pools[].isolation).",
    example: "runc",
  },
  "runtime.docker.gvisorRuntime": {
    comment: "The engine's name for gVisor, the runtime of pools with isolation gvisor (docs/isolation.md).",
  },
  "runtime.docker.serverCommand": {
    comment: "Program (after the image's ENTRYPOINT) that serves contract v1; flags are appended.",
  },
  "runtime.docker.preloadModules": {
    comment:
      "Python modules each sandbox's session imports at warm-up, before it counts as idle (missing ones are skipped; [] turns it off).",
  },
  "runtime.docker.sessionsRoot": { comment: "Where session workspaces live in the container (a tmpfs)." },
  "runtime.docker.engineDownMs": { comment: "An engine that failed to answer is skipped this long." },
  "runtime.docker.engineRequestTimeoutMs": { comment: "Socket timeout of one Docker API call." },
  "runtime.docker.healthProbeTimeoutMs": { comment: "Timeout of one readiness probe of a new sandbox." },
  "runtime.docker.healthProbeIntervalMs": { comment: "Pause between readiness probes." },
  "runtime.docker.logMaxBytes": {
    comment: "Container log cap (user code can write to PID 1's stdout, which would fill the disk).",
  },
  "runtime.python": {
    comment: "Python interpreter of the process runtime's sandboxes; unset finds python3.",
    example: "python3",
  },
  shutdownGraceMs: { comment: "On SIGTERM, how long in-flight requests may finish before exit." },
  migrateOnStart: {
    comment: "Apply pending database migrations at start-up instead of via sandpool migrate.",
  },
};

type Schema = z.core.$ZodType;

interface Line {
  indent: number;
  text: string;
  kind: "comment" | "active" | "disabled" | "blank";
}

function inline(value: unknown): string {
  if (typeof value === "string" && value.includes("\n")) return JSON.stringify(value);
  return stringify(value, { collectionStyle: "flow", flowCollectionPadding: false, lineWidth: 0 }).trimEnd();
}

/** The value a field takes when the key is absent, if it has one. */
function defaultOf(field: Schema): unknown {
  const result = (field as z.ZodType).safeParse(undefined);
  return result.success ? result.data : undefined;
}

interface Rendered {
  lines: Line[];
  active: boolean;
}

/**
 * `inOptional`: the object itself may be absent (adminListener, runtime.docker.tls), so its
 * required keys are shown commented out too: an active one would switch the object on.
 */
function renderObject(
  shape: Record<string, Schema>,
  path: string[],
  indent: number,
  undocumented: string[],
  inOptional = false,
): Rendered {
  const lines: Line[] = [];
  let anyActive = false;
  for (const [key, field] of Object.entries(shape)) {
    const fieldPath = [...path, key];
    const name = formatKeyPath(fieldPath);
    const doc = fieldDocs[name];
    if (!doc) undocumented.push(name);
    if (indent === 0 && lines.length > 0) lines.push({ indent, text: "", kind: "blank" });
    const required = field._zod.optin === undefined;
    const inner = unwrap(field);
    const def = (inner as z.core.$ZodTypes)._zod.def;
    const element = def.type === "array" ? unwrap(def.element) : undefined;
    const elementDef = element ? (element as z.core.$ZodTypes)._zod.def : undefined;

    const optionalObject = inOptional || (field._zod.optin !== undefined && defaultOf(field) === undefined);
    if (def.type === "object") {
      const child = renderObject(def.shape, fieldPath, indent + 2, undocumented, optionalObject);
      if (doc) lines.push({ indent, text: doc.comment, kind: "comment" });
      lines.push({ indent, text: `${key}:`, kind: child.active ? "active" : "disabled" });
      lines.push(...child.lines);
      anyActive ||= child.active;
    } else if (elementDef?.type === "object") {
      const item = renderObject(
        elementDef.shape,
        [...fieldPath, "[]"],
        indent + 4,
        undocumented,
        optionalObject,
      );
      const first = item.lines.findIndex((line) => line.kind === "active" || line.kind === "disabled");
      for (const [index, line] of item.lines.entries()) {
        if (index < first) line.indent = indent + 2;
        if (index === first) {
          line.indent = indent + 2;
          line.text = `- ${line.text}`;
        }
      }
      if (doc) lines.push({ indent, text: doc.comment, kind: "comment" });
      lines.push({ indent, text: `${key}:`, kind: item.active ? "active" : "disabled" });
      lines.push(...item.lines);
      anyActive ||= item.active;
    } else {
      const fallback = defaultOf(field);
      const value = fallback !== undefined ? fallback : doc?.example;
      const active = (required && !inOptional) || doc?.active === true;
      if (value === undefined) undocumented.push(`${name} (no default and no example value)`);
      if (doc) lines.push({ indent, text: doc.comment, kind: "comment" });
      lines.push({ indent, text: `${key}: ${inline(value ?? null)}`, kind: active ? "active" : "disabled" });
      anyActive ||= active;
    }
  }
  return { lines, active: anyActive };
}

function environmentBlock(): string[] {
  const width = Math.max(...configEnvVariables.map((v) => v.name.length));
  return [
    "Environment variables override this file (empty ones count as unset). An auth key source",
    "set here replaces the file's. Unknown SANDPOOL_ variables are errors.",
    ...configEnvVariables.map((v) => `  ${v.name.padEnd(width)}  ${v.path}: ${v.description}`),
  ];
}

/** The example and the config paths it could not document (a test keeps the list empty). */
export function renderConfigExample(): { text: string; undocumented: string[] } {
  const undocumented: string[] = [];
  const root = unwrap(gatewayConfigSchema) as z.core.$ZodObject;
  const body = renderObject(root._zod.def.shape, [], 0, undocumented);
  const header = [
    "sandpool gateway configuration, as printed by sandpool config example.",
    "Check a file with the environment applied: sandpool config check --config sandpool.yaml",
    "Settings commented out are optional and show their default. Unknown keys are errors.",
  ];
  const text = [
    ...header.map((line) => `# ${line}`),
    "",
    ...body.lines.map((line) => {
      if (line.kind === "blank") return "";
      const pad = " ".repeat(line.indent);
      return line.kind === "active" ? `${pad}${line.text}` : `${pad}# ${line.text}`;
    }),
    "",
    ...environmentBlock().map((line) => `# ${line}`),
    "",
  ].join("\n");
  return { text, undocumented };
}

/** A complete, commented configuration file that loads as it is. */
export function configExample(): string {
  return renderConfigExample().text;
}
