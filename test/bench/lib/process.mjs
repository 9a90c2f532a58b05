/**
 * Child processes and temp directories for benches, tracked so they are always cleaned up:
 * on normal completion (cleanupAll), on an error, on Ctrl-C / SIGTERM, and as a last resort
 * synchronously at process exit.
 */
import { execFileSync, spawn } from "node:child_process";
import { rmSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";

const children = new Set();
const tempDirs = new Set();
/** Clean-ups beyond children and temp dirs (a deployment's containers, keys, database). */
const cleanups = new Set();
let handlersInstalled = false;
let interrupted = false;

/** True once SIGINT/SIGTERM started the clean-up: errors after that are its side effects. */
export function isInterrupted() {
  return interrupted;
}

/** Kills what is left and removes temp dirs when the bench is interrupted or exits. */
export function installCleanupHandlers() {
  if (handlersInstalled) return;
  handlersInstalled = true;
  for (const [signal, code] of [
    ["SIGINT", 130],
    ["SIGTERM", 143],
  ]) {
    process.once(signal, () => {
      interrupted = true;
      process.stderr.write(`[bench] ${signal}: cleaning up\n`);
      cleanupAll().finally(() => process.exit(code));
    });
  }
  process.once("exit", () => {
    for (const child of children) {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    }
    for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  });
}

/** A fresh directory under the OS temp dir, removed by cleanupAll / at exit. */
export async function makeTempDir(prefix) {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  tempDirs.add(dir);
  return dir;
}

export async function removeTempDir(dir) {
  await rm(dir, { recursive: true, force: true, maxRetries: 3 });
  tempDirs.delete(dir);
}

/** spawn() whose child is tracked until it exits. */
export function spawnTracked(command, args, options = {}) {
  const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"], ...options });
  children.add(child);
  child.once("exit", () => children.delete(child));
  child.once("error", () => children.delete(child));
  return child;
}

function exited(child) {
  return child.exitCode !== null || child.signalCode !== null;
}

/** Resolves with { code, signal } once `child` has exited (immediately if it already has). */
export function waitForExit(child) {
  if (exited(child)) return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
}

/**
 * Waits until a line of the child's stdout matches `pattern`; resolves with the match.
 * Rejects when the child exits first or after `timeoutMs`, quoting its stderr.
 */
export function waitForLine(child, pattern, timeoutMs) {
  return new Promise((resolve, reject) => {
    let buffered = "";
    let stderr = "";
    const onStderr = (chunk) => {
      if (stderr.length < 8192) stderr += chunk.toString("utf8");
    };
    const finish = (error, value) => {
      clearTimeout(timer);
      child.stdout.off("data", onStdout);
      child.stderr?.off("data", onStderr);
      child.off("exit", onExit);
      if (error) reject(error);
      else resolve(value);
    };
    const onStdout = (chunk) => {
      buffered += chunk.toString("utf8");
      let newline = buffered.indexOf("\n");
      while (newline !== -1) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        const match = pattern.exec(line);
        if (match) return finish(undefined, match);
        newline = buffered.indexOf("\n");
      }
    };
    const onExit = (code, signal) =>
      finish(new Error(`process exited (code ${code}, signal ${signal}) before ready\nstderr:\n${stderr}`));
    const timer = setTimeout(
      () => finish(new Error(`no line matching ${pattern} within ${timeoutMs} ms\nstderr:\n${stderr}`)),
      timeoutMs,
    );
    child.stdout.on("data", onStdout);
    child.stderr?.on("data", onStderr);
    child.once("exit", onExit);
  });
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves with { code, signal, forced }. */
export async function stopProcess(child, graceMs = 5_000) {
  if (exited(child)) return { code: child.exitCode, signal: child.signalCode, forced: false };
  const done = waitForExit(child);
  child.kill("SIGTERM");
  let timer;
  const timeout = new Promise((resolve) => {
    timer = setTimeout(() => resolve("timeout"), graceMs);
  });
  const first = await Promise.race([done, timeout]);
  clearTimeout(timer);
  if (first !== "timeout") return { ...first, forced: false };
  child.kill("SIGKILL");
  return { ...(await done), forced: true };
}

/**
 * Runs a command to completion and returns how long it took from spawn to exit (ms).
 * Throws on a non-zero exit or after `timeoutMs`.
 */
export async function timeProcess(command, args, { timeoutMs = 30_000 } = {}) {
  const start = performance.now();
  const child = spawnTracked(command, args, { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (chunk) => {
    if (stderr.length < 4096) stderr += chunk.toString("utf8");
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  const spawnFailed = new Promise((_, reject) => child.once("error", reject));
  const { code, signal } = await Promise.race([waitForExit(child), spawnFailed]).finally(() =>
    clearTimeout(timer),
  );
  const ms = performance.now() - start;
  if (code !== 0)
    throw new Error(`${command} ${args.join(" ")} failed (code ${code}, signal ${signal}): ${stderr}`);
  return ms;
}

/** Registers `fn` to run in cleanupAll (also on Ctrl-C); returns a function that unregisters it. */
export function onCleanup(fn) {
  cleanups.add(fn);
  return () => cleanups.delete(fn);
}

/** Runs the registered clean-ups, stops every tracked child and removes every tracked temp dir. */
export async function cleanupAll() {
  for (const fn of [...cleanups]) {
    cleanups.delete(fn);
    await Promise.resolve()
      .then(fn)
      .catch((error) => process.stderr.write(`[bench] clean-up failed: ${error}\n`));
  }
  await Promise.all([...children].map((child) => stopProcess(child, 3_000).catch(() => undefined)));
  await Promise.all([...tempDirs].map((dir) => removeTempDir(dir).catch(() => undefined)));
}

/**
 * The real interpreter behind `command` (sys.executable), so version-manager shims on PATH
 * do not add their start-up cost to every measurement.
 */
export function resolvePython(command = "python3") {
  const out = execFileSync(command, ["-c", "import sys;print(sys.executable)"], {
    encoding: "utf8",
    timeout: 15_000,
  });
  const executable = out.trim();
  if (!executable) throw new Error(`${command} did not report sys.executable`);
  return executable;
}

/** Keeps the tail of a child's stderr (its log) for error messages, and the pipe drained. */
export function tailOf(child, maxChars = 65536) {
  let log = "";
  child.stderr.on("data", (chunk) => {
    log = (log + chunk.toString("utf8")).slice(-maxChars);
  });
  return () => log;
}

/**
 * Runs a bench's `main`, then cleans up every child and temp dir. A failure is printed and
 * makes the exit code 1; after SIGINT/SIGTERM the clean-up handlers exit by themselves, and
 * the errors the interruption caused are not worth printing.
 */
export async function runBench(main) {
  try {
    await main();
    await cleanupAll();
  } catch (error) {
    if (isInterrupted()) return;
    process.stderr.write(
      `[bench] error: ${error instanceof Error ? (error.stack ?? error.message) : error}\n`,
    );
    await cleanupAll();
    process.exitCode = 1;
  }
}
