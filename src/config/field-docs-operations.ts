/**
 * The example configuration's comments on how the gateway runs: background jobs, metrics,
 * hibernation, retention, the usage backlog, egress, the stores, the runtime and start-up
 * (config-example.ts).
 */
import type { FieldDocs } from "./field-doc.js";

export const operationsFieldDocs: FieldDocs = {
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
  console: {
    comment:
      "The operator console at /console (docs/console.md): static files beside the admin API, used with an admin token.",
  },
  "console.enabled": {
    comment: "Serve the console (false: /console is an unknown route). Env SANDPOOL_CONSOLE_ENABLED.",
  },
  secrets: {
    comment:
      "The key ring workspace secrets are sealed with at rest (docs/secrets.md). Without keys the gateway serves, and the secrets API answers 503 secrets.not_configured.",
  },
  "secrets.keys": {
    comment:
      "id:base64key entries, comma-separated, 32-byte keys (replace the example: openssl rand -base64 32); the first seals, every one opens. Env SANDPOOL_SECRETS_KEYS.",
    example: "k1:Y2hhbmdlLW1lLW9wZW5zc2wtcmFuZC1iYXNlNjQtMzI=",
  },
  "secrets.keysFile": {
    comment:
      "A file of id:base64key lines instead (a mounted secret), read at start-up. Env SANDPOOL_SECRETS_KEYS_FILE.",
    example: "/run/secrets/sandpool-secrets-keys",
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
  "usageBacklog.journalDir": {
    comment:
      "Where `sandpool serve` journals each call's usage record before answering, for another replica to replay if this one dies (default: <OS temp dir>/sandpool-usage-journal/<deployment>). Use a volume that outlives the container (e.g. an emptyDir); a machine crash may lose what the kernel had not yet written.",
    example: "/var/lib/sandpool/usage-journal",
  },
  "usageBacklog.journalReplayAfterMs": {
    comment:
      "A journal segment nobody has written to for this long is left behind: any replica replays it into the backlog.",
  },
  "usageBacklog.notReadyAbove": {
    comment: "Records waiting past which /readyz answers not ready (Postgres is not keeping up).",
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
  "egress.caCertFile": {
    comment:
      "PEM certificate of the CA egress sandboxes trust, for hosts a credential is bound to; with caKeyFile, else one is made and kept in Postgres.",
    example: "/etc/sandpool/egress-ca/tls.crt",
  },
  "egress.caKeyFile": {
    comment: "PEM private key of egress.caCertFile (EC P-256/P-384 or RSA); it never leaves the gateway.",
    example: "/etc/sandpool/egress-ca/tls.key",
  },
  "egress.upstreamCaFiles": {
    comment:
      "Extra PEM CA files the proxy verifies upstream servers against (besides Node's roots), where it adds credentials.",
  },
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
