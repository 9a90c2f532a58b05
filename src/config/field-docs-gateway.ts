/**
 * The example configuration's comments on what the gateway serves and enforces: its role and
 * listeners, auth, the deployment's policy, the pools, request limits and HTTP (config-example.ts).
 */
import type { FieldDocs } from "./field-doc.js";

const EXAMPLE_IMAGE = "sandpool/sandbox:dev";

export const gatewayFieldDocs: FieldDocs = {
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
  "pools[].maxTotal": {
    comment:
      "Most sandboxes at once, leased and idle together: a burst of 100 sessions fits the default (an idle lean sandbox holds about 25 MiB).",
  },
  "pools[].warmupConcurrency": { comment: "Sandboxes started at once while warming up." },
  "pools[].coldStartTimeoutMs": { comment: "Deadline of a cold start when the pool is dry." },
  "pools[].egress": {
    comment:
      "Sandboxes with egress through the gateway's filtering proxy (egress.*), leased only where policy allows it.",
  },
  "pools[].demand": {
    comment:
      "Keep more than minIdle ready while the deployment leases faster than the pool refills (lease rate x p95 refill time), and a burst reserve: the most leases within one refill time in the last ten minutes (up to maxTotal).",
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
      "Warm-up sandbox starts in flight at once per replica, all pools together; unset: the machine's CPU count. Cold starts never wait for it (they keep to what the engine absorbs).",
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
};
