/**
 * `hibernate`: where hibernated sessions' checkpoints are kept (docs/hibernate.md). A node-local
 * directory by default; a directory every node mounts (a ReadWriteMany volume) lets a session
 * resume on another node, which `shared` says.
 */
import { z } from "zod";
import { settingDocs } from "../contract/setting-docs.js";

export const DEFAULT_CHECKPOINT_DIR = "/var/lib/sandpool/checkpoints";
/**
 * A gVisor checkpoint is about the memory its sandbox holds (5 MiB for an idle interpreter,
 * up to the resource class's memory): 20 GiB keeps thousands of idle sessions and hundreds of
 * busy ones, and bounds what hibernation can take of a node's disk.
 */
export const DEFAULT_MAX_STORE_BYTES = 20 * 1024 ** 3;
/** The disk under the store keeps this much free for the engine, images and sandboxes' own writes. */
export const DEFAULT_MIN_FREE_BYTES = 2 * 1024 ** 3;

export const hibernateSettingsSchema = z
  .strictObject({
    /** The checkpoint store's root: mode 0700, a directory per workspace inside. */
    checkpointDir: z
      .string()
      .startsWith("/", "checkpointDir is an absolute path")
      .default(DEFAULT_CHECKPOINT_DIR)
      .register(settingDocs, {
        doc: "The checkpoint store's root, mode 0700, a directory per workspace; local to this node unless shared.",
      }),
    /** Every node mounts the same checkpointDir: a hibernated session may resume on any of them. */
    shared: z.boolean().default(false).register(settingDocs, {
      doc: "true when every node mounts the same checkpointDir (a ReadWriteMany volume): sessions may resume on any node.",
    }),
    /**
     * Bytes the store may hold, all workspaces together; at it, hibernation is refused (503
     * `capacity.checkpoint_space`) and the session keeps running. A shared store is one store.
     */
    maxStoreBytes: z.number().int().positive().default(DEFAULT_MAX_STORE_BYTES).register(settingDocs, {
      doc: "Bytes the checkpoint store may hold, every workspace's checkpoints together; at it, hibernation is refused (503 capacity.checkpoint_space) and the session keeps running.",
    }),
    /** Free bytes the store's disk must keep; below them, hibernation is refused likewise. 0: no floor. */
    minFreeBytes: z.number().int().nonnegative().default(DEFAULT_MIN_FREE_BYTES).register(settingDocs, {
      doc: "Free bytes the checkpoint store's disk must keep; below them, hibernation is refused likewise (0: no floor).",
    }),
  })
  .prefault({});

export type HibernateSettings = z.infer<typeof hibernateSettingsSchema>;
