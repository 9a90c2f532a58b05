/** The shapes of the operator's session operations (`GET /sessions`, `DELETE /sessions/{id}`). */
import { z } from "zod";
import { pathParams, workspaceFilter } from "./admin-params.js";

/** A running session as operators see it; dates are ISO 8601. */
export const sessionViewSchema = z.object({
  id: z.string(),
  workspace: z.string(),
  image: z.string(),
  pool: z.string(),
  sandboxId: z.string(),
  runtimeId: z.string().meta({
    description:
      "Where the sandbox runs: with docker `<engine index>:<container id>`, with the process runtime its process. For a hibernated session, the container it ran in last (removed).",
  }),
  state: z.enum(["running", "hibernating", "hibernated", "resuming"]).meta({
    description:
      "running: its sandbox serves it; hibernated: saved to a checkpoint, its container removed (any call resumes it); hibernating and resuming: on the way.",
  }),
  checkpoint: z
    .object({
      kind: z.enum(["memory", "files"]).meta({
        description:
          "memory: the interpreter's variables and every file (gVisor); files: the workspace's files.",
      }),
      bytes: z.number().int(),
      hibernated: z.string(),
    })
    .optional()
    .meta({ description: "What a hibernated session's checkpoint keeps." }),
  hibernationRefused: z
    .object({
      code: z.string().meta({
        description:
          "quota.hibernated_sessions (the workspace's maxHibernatedSessions) or capacity.checkpoint_space (the checkpoint store's hibernate.maxStoreBytes or hibernate.minFreeBytes).",
      }),
      message: z.string(),
      at: z.string(),
    })
    .optional()
    .meta({
      description:
        "Its last hibernation, refused at a bound since it last hibernated: it kept running. Gone once a save is committed.",
    }),
  created: z.string(),
  lastActivity: z.string(),
  expires: z.string().meta({ description: "When it ends unless something touches it first." }),
  idleTimeoutSeconds: z.number().int(),
  maxLifetimeSeconds: z.number().int(),
  activeCalls: z.number().int(),
});

export type SessionView = z.output<typeof sessionViewSchema>;

export const sessionsQuerySchema = z.object({ workspace: workspaceFilter });
export const sessionsResultSchema = z.object({ items: z.array(sessionViewSchema) });
export const sessionParams = pathParams("id", "The session's id.");
export const endedResultSchema = z.object({ ended: sessionViewSchema });
export const hibernatedResultSchema = z.object({ hibernated: sessionViewSchema });
export const resumedResultSchema = z.object({
  resumed: sessionViewSchema,
  restored: z.boolean().meta({
    description:
      "Whether this call restored it from its checkpoint; false: it was running already (or another call resumed it first), nothing was done.",
  }),
});
