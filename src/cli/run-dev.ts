/**
 * `sandpool dev`: PGlite (same migrations as production), the memory coordination store,
 * in-process jobs and the process runtime, with a generated signing key. Prints what it
 * runs, a ready token and a curl line, then serves until SIGINT/SIGTERM, when it ends every
 * session and sandbox it started.
 */
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { DEV_USER_SUBJECT, loadOrCreateDevKey, mintToken } from "../auth/dev-keys.js";
import { gatewayConfigSchema } from "../config/gateway-config.js";
import { startDevGateway } from "../gateway/start-dev-gateway.js";
import { normalizeBasePath } from "../http/gateway-app.js";
import { createLogger } from "../logging/create-logger.js";
import { loadOrCreateDevSecretsKeys } from "../secrets/dev-secrets-key.js";
import { openPglite } from "../store/sql/open-database.js";
import { chooseDevRuntime, type DevRuntimeChoice } from "./choose-dev-runtime.js";
import { onShutdown } from "./on-shutdown.js";
import { printReady } from "./ready-line.js";

export const DEV_IMAGE = "sandpool/sandbox:dev";
/** numpy, pandas, matplotlib...: pooled too (smaller) when the engine has it. */
export const DEV_DATASCIENCE_IMAGE = "sandpool/sandbox-datascience:dev";
export const DEV_WORKSPACE = "dev";

function envInteger(name: string): number | undefined {
  const value = process.env[name];
  if (value === undefined || value === "") return undefined;
  if (!/^\d+$/.test(value)) throw new Error(`${name} must be a whole number, got '${value}'`);
  return Number(value);
}

function envFlag(name: string): boolean | undefined {
  const value = process.env[name]?.trim().toLowerCase();
  if (value === undefined || value === "") return undefined;
  if (["true", "1", "yes", "on"].includes(value)) return true;
  if (["false", "0", "no", "off"].includes(value)) return false;
  throw new Error(`${name} must be true or false, got '${value}'`);
}

export async function runDev(options: Record<string, unknown>): Promise<void> {
  const log = createLogger("sandpool-dev");
  const dataDir = path.resolve(options.dataDir as string);
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const { secret } = await loadOrCreateDevKey(dataDir);
  // Workspace secrets are sealed with a key kept beside the rest of dev's state, unless given.
  const secretsKeys = process.env.SANDPOOL_SECRETS_KEYS || (await loadOrCreateDevSecretsKeys(dataDir));
  const minIdle = (options.minIdle as number | undefined) ?? envInteger("SANDPOOL_MIN_IDLE") ?? 2;
  const maxTotal = Math.max(
    minIdle,
    (options.maxTotal as number | undefined) ?? envInteger("SANDPOOL_MAX_TOTAL") ?? 10,
  );
  // As in serve: demand may keep more than minIdle warm; warm-up starts capped per machine.
  const demand = envFlag("SANDPOOL_POOL_DEMAND") ?? true;
  const maxWarmupStarts = envInteger("SANDPOOL_MAX_WARMUP_STARTS");
  // A data-science sandbox is heavier to keep warm: one is enough to make a lease instant.
  const dataScienceMinIdle = Math.min(minIdle, 1);
  const devConfig = (dataScience: boolean) =>
    gatewayConfigSchema.parse({
      host: options.host,
      port: (options.port as number | undefined) ?? envInteger("SANDPOOL_PORT") ?? 8080,
      basePath: (options.basePath as string | undefined) ?? process.env.SANDPOOL_BASE_PATH ?? "",
      auth: { jwtSecret: secret },
      secrets: { keys: secretsKeys },
      limits: maxWarmupStarts === undefined ? {} : { maxWarmupStarts },
      policy: {
        allowedImages: dataScience ? [DEV_IMAGE, DEV_DATASCIENCE_IMAGE] : [DEV_IMAGE],
        defaultImage: DEV_IMAGE,
      },
      pools: [
        { name: "default", image: DEV_IMAGE, minIdle, maxTotal, demand },
        ...(dataScience
          ? [
              {
                name: "datascience",
                image: DEV_DATASCIENCE_IMAGE,
                minIdle: dataScienceMinIdle,
                maxTotal,
                demand,
              },
            ]
          : []),
      ],
    });
  const policyDefaults = devConfig(false).policy;

  const db = await openPglite(path.join(dataDir, "pglite"));
  const { runtime, why, optionalImages } = await chooseDevRuntime({
    choice: (options.runtime as DevRuntimeChoice | undefined) ?? "auto",
    image: DEV_IMAGE,
    optionalImages: [DEV_DATASCIENCE_IMAGE],
    dataDir,
    python: options.python as string,
    execTimeoutCeilingSeconds: policyDefaults.execTimeoutCeilingSeconds,
    maxFileBytes: policyDefaults.maxFileBytes,
    log,
  });
  const dataScience = optionalImages.includes(DEV_DATASCIENCE_IMAGE);
  const config = devConfig(dataScience);
  const { gateway, store, close } = await startDevGateway(config, { db, runtime }, log);

  // A subject, as `sandpool token` gives: the audit trail names who, not a token id.
  const token = await mintToken({ secret, workspace: DEV_WORKSPACE, subject: DEV_USER_SUBJECT });
  // For the admin API and `sandpool policy`: scoped to no workspace, named in the audit trail.
  const adminToken = await mintToken({ secret, admin: true, subject: "dev-admin" });
  const base = `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${gateway.port}`;
  const idle = await store.listIdle("default");
  const lines = [
    "",
    "sandpool dev",
    `  mode      dev (PGlite at ${path.join(dataDir, "pglite")}, in-memory coordination, in-process jobs)`,
    ...(runtime.isolated
      ? [`  runtime   docker (${why}): hardened containers with no network, reached through Unix sockets`]
      : [
          `  runtime   process (${why}): sandboxes are child processes of this one.`,
          "            !!! NOT ISOLATED: code run in a session has this user's access to this machine. !!!",
        ]),
    `  pools     default: ${DEV_IMAGE}, ${idle.length} warm (min_idle ${minIdle}, max_total ${maxTotal})`,
    dataScience
      ? `            datascience: ${DEV_DATASCIENCE_IMAGE}, ${(await store.listIdle("datascience")).length} warm (min_idle ${dataScienceMinIdle}, max_total ${maxTotal}; ask for it with {"image": "${DEV_DATASCIENCE_IMAGE}"})`
      : runtime.isolated
        ? `            datascience: not offered, the engine lacks ${DEV_DATASCIENCE_IMAGE} (npm run build:sandbox-image builds it)`
        : "            datascience: not offered with the process runtime (sandboxes run this machine's Python)",
    `  contract  ${base}/${normalizeBasePath(config.basePath) ? ` and ${base}${normalizeBasePath(config.basePath)}/` : ""}`,
    `  metrics   ${base}/metrics`,
    `  admin     ${base}/admin/v1 (admin token; \`sandpool policy --help\`)`,
    ...(config.console.enabled ? [`  console   ${base}/console (sign in with the admin token)`] : []),
    "",
    `SANDPOOL_TOKEN=${token}`,
    `SANDPOOL_ADMIN_TOKEN=${adminToken}`,
    "",
    "Try it:",
    `  export SANDPOOL_TOKEN=${token}`,
    `  curl -s -X POST ${base}/sessions -H "Authorization: Bearer $SANDPOOL_TOKEN"`,
    `  npx sandpool token --workspace another-team   # a token for another workspace`,
    `  npx sandpool token --workspace ${DEV_WORKSPACE}   # a new one when this one expires (tokens last 24 h)`,
    `  export SANDPOOL_URL=${base} SANDPOOL_ADMIN_TOKEN=${adminToken}`,
    `  npx sandpool policy get ${DEV_WORKSPACE}   # the policy in force, and where each value comes from`,
    "",
  ];
  printReady(options.json === true, lines, {
    mode: "dev",
    url: base,
    ...(normalizeBasePath(config.basePath) ? { basePath: normalizeBasePath(config.basePath) } : {}),
    metricsUrl: `${base}/metrics`,
    adminUrl: `${base}/admin/v1`,
    workspace: DEV_WORKSPACE,
    token,
    adminToken,
    runtime: { kind: runtime.isolated ? "docker" : "process", isolated: runtime.isolated, why },
    dataDir,
    pools: await Promise.all(
      config.pools.map(async (pool) => ({
        name: pool.name,
        image: pool.image,
        warm: (await store.listIdle(pool.name)).length,
        minIdle: pool.minIdle,
        maxTotal: pool.maxTotal,
      })),
    ),
  });

  // Nobody else will serve dev mode's sessions: they end, and their sandboxes go.
  onShutdown(log, close);
}
