/**
 * One warm pool of the configuration (`pools[]`): its image, sizes and warm-up, and the rules
 * between its own settings (gateway-config.ts checks those between pools).
 */
import { z } from "zod";
import { settingDocs } from "../contract/setting-docs.js";
import { isolationLevels } from "../policy-schema/isolation-levels.js";
import { START_QUEUE_TIMEOUT_MS } from "../pool/sandbox-pool.js";

const positive = z.number().int().min(1);

export const poolSpecSchema = z
  .strictObject({
    name: z
      .string()
      .regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, "pool names are lower-case letters, digits, - and _")
      .register(settingDocs, {
        doc: "Pool name (lower-case letters, digits, - and _), a label on its containers.",
        example: "default",
      }),
    image: z
      .string()
      .min(1)
      .register(settingDocs, { doc: "The image its sandboxes run.", example: "sandpool/sandbox:dev" }),
    resourceClass: z
      .string()
      .min(1)
      .default("standard")
      .register(settingDocs, { doc: "Resource class of its sandboxes." }),
    minIdle: z
      .number()
      .int()
      .min(0)
      .default(2)
      .register(settingDocs, {
        doc: "Ready sandboxes kept warm.",
        env: { name: "SANDPOOL_MIN_IDLE", description: "warm containers of the default image's pool" },
      }),
    maxTotal: positive.default(100).register(settingDocs, {
      doc: "Most sandboxes at once, leased and idle together: a burst of 100 sessions fits the default (an idle lean sandbox holds about 25 MiB).",
      env: { name: "SANDPOOL_MAX_TOTAL", description: "most containers of the default image's pool" },
    }),
    warmupConcurrency: positive
      .default(2)
      .register(settingDocs, { doc: "Sandboxes started at once while warming up." }),
    coldStartTimeoutMs: positive
      .default(30_000)
      .register(settingDocs, { doc: "Deadline of a cold start when the pool is dry." }),
    startQueueTimeoutMs: positive.default(START_QUEUE_TIMEOUT_MS).register(settingDocs, {
      doc: "How long a lease waits its turn to start a sandbox while the engine is busy with others (a burst) before a 503; its own start then has coldStartTimeoutMs.",
    }),
    egress: z.boolean().default(false).register(settingDocs, {
      doc: "Sandboxes with egress through the gateway's filtering proxy (egress.*), leased only where policy allows it.",
    }),
    /**
     * Warm-up keeps more than minIdle ready when the deployment leases faster than it
     * refills (lease rate x p95 refill time, up to maxTotal; src/pool/pool-demand.ts).
     */
    demand: z
      .boolean()
      .default(true)
      .register(settingDocs, {
        doc: "Keep more than minIdle ready while the deployment leases faster than the pool refills (lease rate x p95 refill time), and a burst reserve: the most leases within one refill time in the last ten minutes (up to maxTotal).",
        env: {
          name: "SANDPOOL_POOL_DEMAND",
          description: "the default image's pool keeps more than minIdle warm under demand (true/false)",
        },
      }),
    /**
     * The sandboxes' kernel boundary: `container` (the engine's default runtime) or `gvisor`
     * (runtime.docker.gvisorRuntime, a user-space kernel; docs/isolation.md).
     */
    isolation: z.enum(isolationLevels).default("container").register(settingDocs, {
      doc: "container (the engine's default runtime) or gvisor (a user-space kernel between user code and the host's; docs/isolation.md).",
    }),
  })
  .refine((pool) => pool.minIdle <= pool.maxTotal, { message: "minIdle cannot exceed maxTotal" })
  // An egress sandbox connects to the proxy's socket in its host directory, which runsc as
  // registered (--host-uds=create) does not allow: refused rather than failing at every start.
  .refine((pool) => !(pool.egress && pool.isolation === "gvisor"), {
    message: "egress pools cannot run under gVisor yet (docs/isolation.md): use isolation container for it",
  });
