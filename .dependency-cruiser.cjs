/**
 * Which part of src/ may import which (`npm run lint` runs `depcruise src`). The layers are
 * described in docs/architecture.md, "Layers of src/": the transport (src/http) sits at the
 * edge of the house, the stores at the bottom, the sandbox server apart (it runs inside
 * containers). A rule here fails the lint, so an import that climbs a layer fails CI.
 */
const layer = (name) => `^src/${name}/`;
/** Parts below the handlers: they never reach up into a handler, the pipeline or the transport. */
const LOWER = [
  "store",
  "contract",
  "policy-schema",
  "logging",
  "deferred",
  "runtime",
  "hibernate",
  "forward",
  "policy",
  "metering",
  "audit",
  "jobs",
  "pool",
  "auth",
  "admission",
  "egress",
  "secrets",
];
const UPPER = [
  "http",
  "pipeline",
  "session",
  "admin",
  "explain",
  "operations",
  "gateway",
  "cli",
  "discovery",
  "verify",
];

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment: "Files import each other in a circle: move what both need into a file of its own.",
      from: {},
      to: { circular: true },
    },
    {
      name: "store-stays-at-the-bottom",
      severity: "error",
      comment:
        "The stores (src/store) serve every layer and import none above them; the table of policy fields (src/policy-schema) is data their columns are made from.",
      from: { path: layer("store") },
      to: {
        path: "^src/",
        pathNot: "^src/(store|contract|logging|policy-schema)/|^src/version\\.ts$",
      },
    },
    {
      name: "policy-schema-below-the-store",
      severity: "error",
      comment:
        "What a policy is made of (src/policy-schema: the deployment's policy, the table of a workspace row's fields, their values) sits below the store that makes its columns from it: it imports only the contract.",
      from: { path: layer("policy-schema") },
      to: { path: "^src/", pathNot: "^src/(policy-schema|contract)/" },
    },
    {
      name: "lower-layers-never-reach-up",
      severity: "error",
      comment: "A lower layer imports no handler, pipeline step or transport code.",
      from: { path: `^src/(${LOWER.join("|")})/` },
      to: { path: `^src/(${UPPER.join("|")})/` },
    },
    {
      name: "transport-at-the-edge",
      severity: "error",
      comment:
        "The transport (src/http: the Hono app, middleware, HTTP helpers) sits at the edge: the session layer, the admin API's handlers, the pipeline and explain never import it; they take narrow dependencies, wired in src/gateway.",
      from: { path: "^src/(session|admin|pipeline|explain)/" },
      to: { path: layer("http") },
    },
    {
      name: "nothing-imports-the-cli",
      severity: "error",
      comment: "The CLI is the top of the house: nothing else imports it.",
      from: { path: "^src/", pathNot: "^src/cli/" },
      to: { path: layer("cli") },
    },
    {
      name: "sandbox-server-stands-apart",
      severity: "error",
      comment:
        "The sandbox server runs inside containers: it shares only the contract, logging and the HTTP helpers, and nothing of the gateway imports it.",
      from: { path: layer("sandbox") },
      to: { path: "^src/", pathNot: `^src/(sandbox|contract|logging|http/common)/|^src/version\\.ts$` },
    },
    {
      name: "roles-stand-side-by-side",
      severity: "error",
      comment:
        "The roles (src/roles) are side by side: edge and node never import each other, and what they share (src/roles/shared) imports neither.",
      from: { path: "^src/roles/(edge|node|shared)/" },
      to: { path: "^src/roles/(edge|node)/", pathNot: "^src/roles/$1/" },
    },
    {
      name: "runtime-below-the-pools",
      severity: "error",
      comment:
        "Container drivers (src/runtime) know nothing of what uses them: no warm pool, auth, admission or egress policy.",
      from: { path: layer("runtime") },
      to: { path: "^src/(pool|auth|admission|egress)/" },
    },
    {
      name: "pools-know-no-tenancy",
      severity: "error",
      comment:
        "The warm pools (src/pool) start, lease and reap sandboxes; who may have one (auth, admission) and what it may reach (egress) are decided elsewhere.",
      from: { path: layer("pool") },
      to: { path: "^src/(auth|admission|egress)/" },
    },
    {
      name: "auth-stands-alone",
      severity: "error",
      comment:
        "Authentication (src/auth) turns a credential into a principal: it needs no pool, admission, egress, runtime or hibernation.",
      from: { path: layer("auth") },
      to: { path: "^src/(pool|admission|egress|runtime|hibernate)/" },
    },
    {
      name: "admission-counts-only",
      severity: "error",
      comment:
        "Admission (src/admission) counts slots, rates and budgets in the store: it starts no sandbox and authenticates no one (it reads a sandbox's usage type from the runtime's interface, nothing more).",
      from: { path: layer("admission") },
      to: { path: "^src/(pool|auth|egress)/" },
    },
    {
      name: "egress-filters-only",
      severity: "error",
      comment:
        "The egress proxy (src/egress) filters a sandbox's outbound traffic by its session's policy: no pool, auth or admission.",
      from: { path: layer("egress") },
      to: { path: "^src/(pool|auth|admission)/" },
    },
    {
      name: "not-to-unresolvable",
      severity: "error",
      comment: "An import that resolves to nothing.",
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      extensions: [".ts", ".js", ".mjs", ".json"],
    },
  },
};
