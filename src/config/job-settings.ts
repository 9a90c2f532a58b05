/**
 * The background jobs' settings: how often they run, how long usage and audit rows are kept
 * and the usage backlog on its way to Postgres (gateway-config.ts).
 */
import { z } from "zod";
import { settingDocs } from "../contract/setting-docs.js";

const positive = z.number().int().min(1);

export const intervalsSettingsSchema = z
  .strictObject({
    warmMs: positive
      .default(1_000)
      .register(settingDocs, { doc: "How often pools are topped up to minIdle." }),
    reapMs: positive
      .default(1_000)
      .register(settingDocs, { doc: "How often idle and expired sessions are ended." }),
    reconcileMs: positive
      .default(30_000)
      .register(settingDocs, { doc: "How often the runtime's containers are compared with the store." }),
    /** How often leased sandboxes' CPU is read and charged (src/admission/cpu-meter.ts). */
    cpuMeterMs: positive.default(2_000).register(settingDocs, {
      doc: "How often every leased sandbox's CPU is read and charged to its workspace's day; a spent day's sandboxes that still run code are stopped within about one period.",
    }),
    /** Longer than any sandbox start takes, so a start in progress is never called an orphan. */
    orphanGraceMs: positive.default(120_000).register(settingDocs, {
      doc: "How old a sandbox nobody knows must be before it is destroyed as an orphan.",
    }),
  })
  .prefault({})
  .register(settingDocs, { doc: "Periods of the background jobs." });

/**
 * How long raw usage events and audit rows are kept. Raw events are rolled up per UTC day
 * (usage_daily, kept for good) before they are pruned; audit rows are simply deleted.
 */
export const retentionSettingsSchema = z
  .strictObject({
    usageEventsDays: positive.default(35).register(settingDocs, {
      doc: "Raw usage events older than this many days are deleted once rolled up (hourly reports need them; daily ones read the rollup).",
      env: {
        name: "SANDPOOL_RETENTION_USAGE_EVENTS_DAYS",
        description: "days raw usage events are kept once rolled up per day",
      },
    }),
    auditDays: positive.default(400).register(settingDocs, {
      doc: "Policy, API key and admin audit rows older than this many days are deleted.",
      env: { name: "SANDPOOL_RETENTION_AUDIT_DAYS", description: "days audit rows are kept" },
    }),
    intervalMs: positive.default(3_600_000).register(settingDocs, {
      doc: "How often the rollup and pruning job runs, once across all replicas.",
    }),
  })
  .prefault({})
  .register(settingDocs, {
    doc: "How long raw usage and audit rows are kept; a scheduled job rolls usage up per UTC day (kept for good) and prunes.",
  });

/**
 * The usage backlog: billing records kept in the coordination store until the drainer
 * has written them to Postgres (src/metering/usage-drainer.ts).
 */
export const usageBacklogSettingsSchema = z
  .strictObject({
    drainMs: positive
      .default(1_000)
      .register(settingDocs, { doc: "How often each replica drains the usage backlog to Postgres." }),
    notReadyAbove: positive.default(1_000_000).register(settingDocs, {
      doc: "Records waiting past which /readyz answers not ready (Postgres is not keeping up).",
      env: {
        name: "SANDPOOL_USAGE_BACKLOG_NOT_READY_ABOVE",
        description: "usage records waiting for Postgres past which /readyz answers not ready",
      },
    }),
    /**
     * Where `sandpool serve` journals each call's usage record before its answer is
     * released (src/metering/usage-journal.ts); default: under the OS temp directory, per
     * deployment. Must outlive the process (a volume, e.g. an emptyDir).
     */
    journalDir: z
      .string()
      .min(1)
      .optional()
      .register(settingDocs, {
        doc: "Where `sandpool serve` journals each call's usage record before answering, for another replica to replay if this one dies (default: <OS temp dir>/sandpool-usage-journal/<deployment>). Use a volume that outlives the container (e.g. an emptyDir); a machine crash may lose what the kernel had not yet written.",
        example: "/var/lib/sandpool/usage-journal",
        env: {
          name: "SANDPOOL_USAGE_JOURNAL_DIR",
          description: "directory of the usage journal (a volume that outlives the container)",
        },
      }),
    journalReplayAfterMs: positive.default(30_000).register(settingDocs, {
      doc: "A journal segment nobody has written to for this long is left behind: any replica replays it into the backlog.",
    }),
  })
  .prefault({})
  .register(settingDocs, {
    doc: "Billing usage waits in the coordination store (Redis) until a replica's drainer writes it to Postgres: nothing is lost while Postgres is away.",
  });
