/**
 * The dev runtime: each sandbox is a `sandpool sandbox` child process with its own root
 * directory and loopback port. It is NOT isolated: user code runs as the gateway's user
 * and can read what that user can. Dev mode says so loudly at start-up.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, rm } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Logger } from "pino";
import type { RuntimeSandbox, SandboxRuntime, StartedSandbox, StartRequest } from "../sandbox-runtime.js";

export interface ProcessRuntimeOptions {
  /** Each sandbox gets a directory below this one. */
  rootDir: string;
  python: string;
  /** The sandbox server's own ceiling for timeout_seconds: at least the deployment's. */
  execTimeoutCeilingSeconds: number;
  maxFileBytes: number;
  log: Logger;
}

interface Child {
  process: ChildProcess;
  sandboxId: string;
  pool: string;
  dir: string;
  exited: Promise<void>;
  createdAt: number;
}

const packageRoot = fileURLToPath(new URL("../../../", import.meta.url));
export const builtCliPath = path.join(packageRoot, "dist", "cli", "main.js");
/** The bundled sandbox server (the image's program): one file, so it starts faster. */
const bundledSandboxPath = path.join(packageRoot, "dist", "sandbox.mjs");
const STOP_GRACE_MS = 3_000;
/** The gateway owns session lifetimes; the sandbox server must never end one first. */
const SANDBOX_SESSION_SECONDS = "31536000";

export class ProcessRuntime implements SandboxRuntime {
  readonly kind = "process" as const;
  readonly isolated = false;
  private readonly children = new Map<string, Child>();
  /** The bundled server when built, else the CLI: chosen once, not checked on every start. */
  private readonly program: string;

  constructor(private readonly options: ProcessRuntimeOptions) {
    if (!existsSync(builtCliPath)) {
      throw new Error(
        `the process runtime runs ${builtCliPath}, which is missing: run 'npm run build' first`,
      );
    }
    this.program = existsSync(bundledSandboxPath) ? bundledSandboxPath : builtCliPath;
  }

  async start(request: StartRequest): Promise<StartedSandbox> {
    if (request.pool.isolation === "gvisor") {
      // Never a silent downgrade: a child process has no kernel boundary at all.
      throw new Error(
        `pool ${request.pool.name} requires gVisor isolation, which the process runtime cannot give`,
      );
    }
    const dir = path.join(this.options.rootDir, request.sandboxId);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const child = spawn(
      process.execPath,
      [
        this.program,
        "sandbox",
        ...["--host", "127.0.0.1", "--port", "0", "--root", dir, "--python", this.options.python],
        ...["--max-sessions", "1", "--exit-with-stdin"],
        ...["--idle-timeout", SANDBOX_SESSION_SECONDS, "--max-idle-timeout", SANDBOX_SESSION_SECONDS],
        ...["--max-lifetime", SANDBOX_SESSION_SECONDS, "--max-lifetime-ceiling", SANDBOX_SESSION_SECONDS],
        ...["--max-exec-timeout", String(this.options.execTimeoutCeilingSeconds)],
        ...["--max-upload-bytes", String(this.options.maxFileBytes)],
      ],
      // stdin stays a pipe: when the gateway dies, it closes and the sandbox server exits.
      { stdio: ["pipe", "pipe", "pipe"], env: processSandboxEnvironment(process.env) },
    );
    const runtimeId = String(child.pid);
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    this.children.set(runtimeId, {
      process: child,
      sandboxId: request.sandboxId,
      pool: request.pool.name,
      dir,
      createdAt: Date.now(),
      exited,
    });
    child.stderr?.on("data", (chunk: Buffer) =>
      this.options.log.warn(
        { sandbox: request.sandboxId, output: chunk.toString().slice(0, 2000) },
        "sandbox stderr",
      ),
    );
    try {
      const endpoint = await waitForListening(child, request.deadline);
      return { runtimeId, endpoint };
    } catch (error) {
      await this.destroy(runtimeId);
      throw error;
    }
  }

  async destroy(runtimeId: string): Promise<void> {
    const child = this.children.get(runtimeId);
    if (!child) return;
    this.children.delete(runtimeId);
    if (child.process.exitCode === null && child.process.signalCode === null) {
      // SIGTERM lets the sandbox server kill its sessions' process groups before it exits.
      child.process.kill("SIGTERM");
      const timer = setTimeout(() => child.process.kill("SIGKILL"), STOP_GRACE_MS);
      await child.exited;
      clearTimeout(timer);
    }
    await rm(child.dir, { recursive: true, force: true, maxRetries: 3 });
  }

  async list(): Promise<RuntimeSandbox[]> {
    // A sandbox server that exited (crashed, killed) is not running, whatever the map says.
    const alive = [...this.children.entries()].filter(
      ([, child]) => child.process.exitCode === null && child.process.signalCode === null,
    );
    return alive.map(([runtimeId, child]) => ({
      runtimeId,
      sandboxId: child.sandboxId,
      pool: child.pool,
      createdAt: child.createdAt,
    }));
  }

  async close(): Promise<void> {
    await Promise.all([...this.children.keys()].map((runtimeId) => this.destroy(runtimeId)));
  }
}

/**
 * The few variables a sandbox server needs, not the gateway's environment: that holds its
 * secrets (token key, database and Redis URLs), which user code would read. (It still runs as
 * this user, so it could read them elsewhere: this runtime is not isolated, and says so.)
 */
const PASSED_VARIABLES = ["PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR"];

export function processSandboxEnvironment(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const passed: NodeJS.ProcessEnv = { SANDPOOL_LOG_LEVEL: "warn" };
  for (const name of PASSED_VARIABLES) if (env[name] !== undefined) passed[name] = env[name];
  return passed;
}

function waitForListening(child: ChildProcess, deadline: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let output = "";
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match) {
        cleanup();
        resolve(match[1]!);
      }
    };
    const onExit = (code: number | null) =>
      fail(new Error(`the sandbox server exited during start-up (${code})`));
    const fail = (error: Error) => {
      cleanup();
      reject(error);
    };
    const timer = setTimeout(
      () => fail(new Error("the sandbox server did not start in time")),
      Math.max(0, deadline - Date.now()),
    );
    const cleanup = () => {
      clearTimeout(timer);
      child.stdout?.off("data", onData);
      child.off("exit", onExit);
    };
    child.stdout?.on("data", onData);
    child.once("exit", onExit);
  });
}
