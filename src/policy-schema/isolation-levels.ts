/**
 * The kernel boundary around a sandbox: `container`, the engine's default runtime (runc:
 * namespaces and cgroups on the host's kernel), or `gvisor`, a user-space kernel (runsc)
 * between user code and the host's (docs/isolation.md).
 *
 * A value of the policy (the least isolation a workspace's sandboxes get) as much as of a
 * pool, so it sits here, below the runtime: the table of policy fields, and the store's
 * columns made from it, name the levels without importing the sandbox drivers.
 */
export const isolationLevels = ["container", "gvisor"] as const;
export type Isolation = (typeof isolationLevels)[number];
