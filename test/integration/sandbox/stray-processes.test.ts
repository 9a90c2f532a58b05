/**
 * `--reap-strays`: processes a tool call leaves behind end when the call returns, while the
 * sessions' persistent interpreters (and their state) survive.
 *
 * The option only works where the server owns its PID namespace, so the server under test
 * runs in one of its own: `unshare --pid --fork --mount-proc` (root), with tini as its
 * PID 1 when the machine has one, as in the sandbox image. It is the real program (the
 * sandbox bundle, built from src/ for this suite), so what it kills is confined to that
 * namespace and nothing else on this machine is at risk. The same server started on the
 * host's namespace must refuse the option.
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandboxServer } from "../../../src/sandbox/start-sandbox-server.js";
import { resolvePython } from "../../support/cli.js";
import { ContractClient } from "../../support/contract-client.js";
import { requireService } from "../../support/require-service.js";
import { newSession } from "../../support/sandbox-server.js";

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));

function unshareWorks(): Promise<boolean> {
  const probe = spawnSync("unshare", ["--pid", "--fork", "--mount-proc", "true"], { encoding: "utf8" });
  if (probe.status === 0) return Promise.resolve(true);
  throw new Error(`unshare --pid --fork --mount-proc failed (needs root): ${probe.stderr || probe.error}`);
}

const available = await requireService("a PID namespace (unshare as root)", unshareWorks, {
  start: "running the tests as root on Linux",
});

/** tini (or Docker's copy of it) to be PID 1 and reap what is killed; else the server is PID 1. */
function findInit(): string[] {
  for (const name of ["tini", "docker-init"]) {
    const found = spawnSync("sh", ["-c", `command -v ${name}`], { encoding: "utf8" }).stdout.trim();
    if (found) return [found, "--"];
  }
  return [];
}

let dir: string;
let server: ChildProcess | undefined;
let client: ContractClient;

beforeAll(async () => {
  if (!available) return;
  dir = await mkdtemp(path.join(tmpdir(), "sandpool-strays-"));
  const bundle = path.join(dir, "sandbox.mjs");
  execFileSync(process.execPath, ["deploy/sandbox/bundle.mjs", "--outfile", bundle], { cwd: repoRoot });
  const child = spawn(
    "unshare",
    [
      ...["--pid", "--fork", "--mount-proc", "--kill-child"],
      ...findInit(),
      process.execPath,
      bundle,
      "sandbox",
      ...["--host", "127.0.0.1", "--port", "0", "--root", path.join(dir, "sessions")],
      ...["--python", resolvePython(), "--reap-strays"],
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  server = child;
  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    let err = "";
    const timer = setTimeout(
      () => reject(new Error(`the sandbox server did not start:\n${out}\n${err}`)),
      30_000,
    );
    child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
      err += chunk;
    });
    child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
      out += chunk;
      const match = /listening on (http:\/\/\S+)/.exec(out);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the sandbox server exited (${code}):\n${out}\n${err}`));
    });
  });
  client = new ContractClient(url);
}, 60_000);

afterAll(async () => {
  if (server && server.exitCode === null) {
    const exited = new Promise((resolve) => server?.once("exit", resolve));
    server.kill("SIGKILL"); // --kill-child takes the namespace's PID 1, and with it every process in it
    await exited;
  }
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Python that counts the live (not zombie) `sleep 1000` processes in the namespace. */
const countSleepers = `
import os
def _sleepers():
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = open(f"/proc/{pid}/cmdline", "rb").read()
            state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if cmdline == b"sleep\\x001000\\x00" and state != "Z":
            found.append(int(pid))
    return found
print(len(_sleepers()))
`;

describe.skipIf(!available)("--reap-strays (a PID namespace of the server's own)", () => {
  it("ends a setsid'd background job of bash when the call returns", async () => {
    const id = await newSession(client);
    const during = await client.run(id, "bash_code_execution", {
      command: "setsid nohup sleep 1000 >/dev/null 2>&1 & sleep 0.3; echo started",
    });
    expect(during.stdout).toBe("started\n");
    // It was running during the call: the same count, taken inside the call, sees it.
    const inside = await client.run(id, "bash_code_execution", {
      command: `setsid nohup sleep 1000 >/dev/null 2>&1 & sleep 0.3; python3 -c '${countSleepers.replaceAll("'", "'\\''")}'`,
    });
    expect(inside.stdout.trim()).toBe("1");
    const after = await client.run(id, "code_execution", { code: countSleepers });
    expect(after.stdout.trim()).toBe("0");
    await client.destroy(id);
  });

  it("ends a child Python started in a new session, and keeps the interpreter and its state", async () => {
    const id = await newSession(client);
    const started = await client.run(id, "code_execution", {
      code: "import os, subprocess\nkept = 41\nchild = subprocess.Popen(['sleep', '1000'], start_new_session=True)\ninterpreter = os.getpid()\nprint(child.poll())",
    });
    expect(started.stdout).toBe("None\n");
    const next = await client.run(id, "code_execution", {
      code: "print(kept + 1, os.getpid() == interpreter, child.wait(timeout=5))",
    });
    expect(next.stderr).toBe("");
    // Killed by SIGKILL between the calls; the interpreter, its pid and its variables survive.
    expect(next.stdout).toBe("42 True -9\n");
    await client.destroy(id);
  });

  it("spares another session's interpreter and state", async () => {
    const a = await newSession(client);
    const b = await newSession(client);
    await client.run(b, "code_execution", { code: "import os\nmine = 'b'\npid = os.getpid()" });
    await client.run(a, "bash_code_execution", { command: "setsid nohup sleep 1000 >/dev/null 2>&1 &" });
    const still = await client.run(b, "code_execution", { code: "print(mine, os.getpid() == pid)" });
    expect(still.stdout).toBe("b True\n");
    expect((await client.run(a, "code_execution", { code: countSleepers })).stdout.trim()).toBe("0");
    await client.destroy(a);
    await client.destroy(b);
  });

  it("leaves a running call's processes alone until the last call in flight returns", async () => {
    const a = await newSession(client);
    const b = await newSession(client);
    // A long call in session b, with a background job of its own.
    const long = client.run(b, "bash_code_execution", {
      command: "setsid nohup sleep 1000 >/dev/null 2>&1 & sleep 6; echo done",
    });
    // Short calls in session a return meanwhile: b's call is in flight, so nothing is reaped
    // and the job shows up (on a loaded machine bash may take a while to start it) and stays.
    const seen: string[] = [];
    const deadline = Date.now() + 4_000;
    while (Date.now() < deadline && seen.at(-1) !== "1") {
      seen.push((await client.run(a, "code_execution", { code: countSleepers })).stdout.trim());
    }
    expect(seen.at(-1), `sleepers seen while b's call ran: ${seen.join(", ")}`).toBe("1");
    expect(seen.every((count) => count === "0" || count === "1")).toBe(true);
    expect((await client.run(a, "code_execution", { code: countSleepers })).stdout.trim()).toBe("1");
    expect((await long).stdout).toBe("done\n");
    expect((await client.run(a, "code_execution", { code: countSleepers })).stdout.trim()).toBe("0");
    await client.destroy(a);
    await client.destroy(b);
  });
});

describe("--reap-strays outside a PID namespace of its own", () => {
  it("is refused at start-up, naming why", async () => {
    const root = await mkdtemp(path.join(tmpdir(), "sandpool-strays-host-"));
    try {
      await expect(
        startSandboxServer(
          { host: "127.0.0.1", port: 0, root, reapStrayProcesses: true },
          pino({ level: "silent" }),
        ),
      ).rejects.toThrow(/PID namespace of the sandbox server's own/);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
