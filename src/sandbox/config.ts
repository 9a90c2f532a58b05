/**
 * The sandbox server's settings: one schema, with the defaults a single container wants.
 * Ceilings are hard limits; defaults apply when a client sends no hint.
 */
import * as z from "zod/mini";

const int = (min: number, fallback: number) => z._default(z.int().check(z.minimum(min)), fallback);
const seconds = (fallback: number) => int(1, fallback);

export const sandboxConfigSchema = z
  .strictObject({
    host: z._default(z.string(), "127.0.0.1"),
    port: z._default(z.int().check(z.minimum(0), z.maximum(65535)), 8080),
    /** Serve on this Unix socket instead of host and port (pooled sandboxes have no network). */
    socket: z.optional(z.string().check(z.minLength(1))),
    root: z.string().check(z.minLength(1)),
    python: z._default(z.string(), "python3"),
    maxSessions: int(1, 64),
    /**
     * Egress sandboxes: the gateway's egress proxy, a Unix socket in the bind-mounted directory,
     * offered to programs as an HTTP proxy on 127.0.0.1:egressProxyPort (egress-forwarder.ts).
     */
    egressProxySocket: z.optional(z.string().check(z.minLength(1))),
    egressProxyPort: z._default(z.int().check(z.minimum(0), z.maximum(65535)), 3128),
    defaultIdleTimeoutSeconds: seconds(300),
    maxIdleTimeoutSeconds: seconds(3600),
    defaultMaxLifetimeSeconds: seconds(3600),
    maxLifetimeSeconds: seconds(86_400),
    defaultExecTimeoutSeconds: seconds(60),
    maxExecTimeoutSeconds: seconds(600),
    /** Per stream (stdout, stderr) and call; the rest is dropped with a marker. */
    maxOutputBytes: int(1024, 1024 * 1024),
    maxUploadBytes: int(1, 100 * 1024 * 1024),
    maxJsonBodyBytes: int(1024, 10 * 1024 * 1024),
    interruptGraceMs: int(0, 2_000),
    reapIntervalMs: int(10, 1_000),
    /** Start each session's Python interpreter at creation, so its first call is fast. */
    prewarmInterpreter: z._default(z.boolean(), true),
    /**
     * Python modules each new session's interpreter imports before the session is answered
     * (with MPLBACKEND=Agg), so a pooled sandbox's first `import pandas` costs nothing. Missing
     * ones are skipped: the same list works on the lean image. Needs prewarmInterpreter.
     */
    preloadModules: z._default(z.array(z.string().check(z.regex(/^[A-Za-z_][\w.]*$/))), []),
    /**
     * Fork each session's interpreter from one pre-imported Python process (the zygote, with
     * preloadModules imported once) instead of starting Python per session: a fork costs
     * milliseconds. Linux only (elsewhere, and whenever the zygote is unavailable, interpreters
     * start one by one). Needs prewarmInterpreter.
     */
    forkInterpreters: z._default(z.boolean(), true),
    /** Longest a session's creation waits for preloadModules; the session is answered anyway after it. */
    preloadTimeoutMs: int(1, 60_000),
    /**
     * After each call, kill every process but this server, its ancestors and the sessions'
     * interpreters (tools/stray-reaper.ts). Only where the server owns its PID namespace (a
     * container): refused at start-up elsewhere.
     */
    reapStrayProcesses: z._default(z.boolean(), false),
    /**
     * Directories outside --root that user code can write to (a read-only root's tmpfs mounts),
     * emptied with --root when the gateway recycles the sandbox for its workspace's next
     * session (sessions/scrub-sandbox.ts). Recycling needs reapStrayProcesses and codeUser.
     */
    scrubDirs: z._default(z.array(z.string().check(z.minLength(1))), []),
    /**
     * Run user code (bash, the interpreters) as this uid:gid, never as the server
     * (user-code/code-user.ts). The server must start as root: it keeps root as its real uid
     * (so user code can neither signal nor trace it, and no per-uid process count applies to
     * it) and works on files as this uid. Docker sandboxes give each container a uid of its own.
     */
    codeUser: z.optional(
      z.strictObject({ uid: z.int().check(z.minimum(1)), gid: z.int().check(z.minimum(1)) }),
    ),
    /** With codeUser: RLIMIT_NPROC of user code, below the container's pids limit so the server keeps room. */
    codeMaxProcesses: z.optional(z.int().check(z.minimum(1))),
  })
  .check(
    z.refine((c) => c.defaultIdleTimeoutSeconds <= c.maxIdleTimeoutSeconds, {
      message: "defaultIdleTimeoutSeconds exceeds maxIdleTimeoutSeconds",
    }),
    z.refine((c) => c.defaultMaxLifetimeSeconds <= c.maxLifetimeSeconds, {
      message: "defaultMaxLifetimeSeconds exceeds maxLifetimeSeconds",
    }),
    z.refine((c) => c.defaultExecTimeoutSeconds <= c.maxExecTimeoutSeconds, {
      message: "defaultExecTimeoutSeconds exceeds maxExecTimeoutSeconds",
    }),
    z.refine((c) => c.codeMaxProcesses === undefined || c.codeUser !== undefined, {
      message:
        "codeMaxProcesses needs codeUser: a process cap counts per uid, and user code needs one of its own",
    }),
  );

export type SandboxConfigInput = z.input<typeof sandboxConfigSchema>;
export type SandboxConfig = z.output<typeof sandboxConfigSchema>;

/** A hint is honoured up to the ceiling; no hint means the default. */
export function clampHint(hint: number | null | undefined, fallback: number, ceiling: number): number {
  return Math.min(hint ?? fallback, ceiling);
}
