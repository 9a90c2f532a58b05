/**
 * `hibernate`: where hibernated sessions' checkpoints are kept (docs/hibernate.md). A node-local
 * directory by default; a directory every node mounts (a ReadWriteMany volume) lets a session
 * resume on another node, which `shared` says.
 */
import { z } from "zod";

export const DEFAULT_CHECKPOINT_DIR = "/var/lib/sandpool/checkpoints";

export const hibernateSettingsSchema = z
  .strictObject({
    /** The checkpoint store's root: mode 0700, a directory per workspace inside. */
    checkpointDir: z
      .string()
      .startsWith("/", "checkpointDir is an absolute path")
      .default(DEFAULT_CHECKPOINT_DIR),
    /** Every node mounts the same checkpointDir: a hibernated session may resume on any of them. */
    shared: z.boolean().default(false),
  })
  .prefault({});

export type HibernateSettings = z.infer<typeof hibernateSettingsSchema>;
