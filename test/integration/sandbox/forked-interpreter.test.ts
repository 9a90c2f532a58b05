/**
 * Sessions' interpreters forked from the sandbox's zygote (src/sandbox/tools/interpreter-zygote.ts):
 * a fresh interpreter with the preload modules already imported, and nothing of any earlier
 * session: no variables, no environment beyond the server's, no open descriptor but its
 * own pipes. One that exits is forked again; a zygote that dies takes its children's
 * interpreters with it (their sessions say so), and interpreters start one by one until it
 * is revived after a scrub (at most three times a minute). `--no-fork-interpreters` starts each interpreter as a process of its
 * own. A real sandbox server (process runtime) and Python; the code's uid and the scrub are
 * checked on containers in test/integration/serve/sandbox-reuse.test.ts.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InterpreterZygote } from "../../../src/sandbox/tools/interpreter-zygote.js";
import { PASSED_VARIABLES } from "../../../src/sandbox/tools/process-group.js";
import { resolvePythonExecutable } from "../../../src/sandbox/tools/resolve-python.js";
import { CodeLauncher } from "../../../src/sandbox/user-code/code-user.js";
import { newSession, startTestSandbox, type TestSandbox, waitFor } from "../../support/sandbox-server.js";

const python = (sandbox: TestSandbox, id: string, code: string) =>
  sandbox.client.run(id, "code_execution", { code });

/** The interpreter's parent, whether a stand-in module is loaded, and its descriptors above 4. */
const PROBE = [
  "import os, sys",
  // Listing opens one descriptor of its own.
  "extra = [fd for fd in os.listdir('/proc/self/fd') if int(fd) > 4]",
  "print(os.getppid(), 'fractions' in sys.modules, len(extra))",
].join("\n");

describe.skipIf(process.platform !== "linux")("forked interpreters", () => {
  let sandbox: TestSandbox;
  beforeAll(async () => {
    sandbox = await startTestSandbox({ preloadModules: ["fractions"] });
  });
  afterAll(() => sandbox?.close());

  it("forks each session's interpreter from the zygote, preload modules imported", async () => {
    const id = await newSession(sandbox.client);
    const [parent, preloaded, extra] = (await python(sandbox, id, PROBE)).stdout.trim().split(" ");
    expect(Number(parent)).not.toBe(process.pid);
    expect(preloaded).toBe("True");
    expect(extra).toBe("1");
  });

  it("answers a recycle's session before its interpreter is forked, and its first call waits for the fork", async () => {
    const background = await sandbox.server.sessions.create({}, { forkInBackground: true });
    expect(background.interpreter.pid).toBeUndefined(); // the zygote has not answered yet
    const [parent, preloaded] = (await python(sandbox, background.id, PROBE)).stdout.trim().split(" ");
    expect(Number(parent)).not.toBe(process.pid);
    expect(preloaded).toBe("True");
    // Any other creation is answered once its interpreter runs.
    const waited = await sandbox.server.sessions.create({});
    expect(waited.interpreter.pid).toBeGreaterThan(0);
  });

  it("gives a new session nothing of an earlier one: variables, environment, descriptors", async () => {
    const first = await newSession(sandbox.client);
    const littered = await python(
      sandbox,
      first,
      [
        "import os",
        "secret = 41",
        "os.environ['LEAKED'] = 'yes'",
        "kept = open(os.devnull)",
        "r, w = os.pipe()",
        "print('littered')",
      ].join("\n"),
    );
    expect(littered.stdout).toBe("littered\n");
    const second = await newSession(sandbox.client);
    const seen = await python(
      sandbox,
      second,
      [
        PROBE,
        "print('secret' in globals(), 'kept' in globals(), os.environ.get('LEAKED'))",
        "print(sorted(os.environ))",
        "print(os.getcwd() == os.environ['HOME'])",
      ].join("\n"),
    );
    const lines = seen.stdout.trim().split("\n");
    expect(lines[0]?.split(" ").slice(1)).toEqual(["True", "1"]);
    expect(lines[1]).toBe("False False None");
    // The minimal environment, and the proxy and trust settings the server itself was given
    // (this machine may set SSL_CERT_FILE and the like; a container sets them for egress).
    const passed = PASSED_VARIABLES.filter((name) => process.env[name] !== undefined);
    const base = ["HOME", "LANG", "LC_ALL", "MPLBACKEND", "MPLCONFIGDIR", "PATH"];
    const python3 = ["PYTHONDONTWRITEBYTECODE", "PYTHONIOENCODING", "PYTHONUNBUFFERED", "TERM"];
    const expected = [...base, ...python3, ...passed].sort();
    expect(lines[2]).toBe(`[${expected.map((name) => `'${name}'`).join(", ")}]`);
    expect(lines[3]).toBe("True");
    // And the earlier session keeps its own state.
    expect((await python(sandbox, first, "print(secret)")).stdout).toBe("41\n");
  });

  it("forks a fresh interpreter when one exits, and the session says its state is gone", async () => {
    const id = await newSession(sandbox.client);
    await python(sandbox, id, "x = 1");
    const died = await python(sandbox, id, "import os; os._exit(3)");
    expect(died.return_code).toBe(3);
    expect(died.stderr).toContain("It was restarted");
    const again = await python(sandbox, id, `${PROBE}\nprint('x' in globals())`);
    const [probe, hasX] = again.stdout.trim().split("\n");
    expect(Number(probe?.split(" ")[0])).not.toBe(process.pid);
    expect(hasX).toBe("False");
  });

  it("survives the zygote's death: its children's sessions go on, started one by one", async () => {
    const id = await newSession(sandbox.client);
    const zygote = Number((await python(sandbox, id, PROBE)).stdout.split(" ")[0]);
    process.kill(zygote, "SIGKILL");
    // The session's interpreter went with it; the next call starts one and says so.
    await waitFor(async () => (await python(sandbox, id, "print('alive')")).stdout === "alive\n", 10_000);
    // Until a scrub (none without --code-user), later sessions' interpreters start alone.
    const later = await newSession(sandbox.client);
    expect(Number((await python(sandbox, later, PROBE)).stdout.split(" ")[0])).toBe(process.pid);
  });
});

describe.skipIf(process.platform !== "linux")("InterpreterZygote", () => {
  let dir: string;
  let zygote: InterpreterZygote;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "sandpool-zygote-"));
    zygote = new InterpreterZygote({
      python: () => resolvePythonExecutable("python3", new CodeLauncher()),
      launcher: new CodeLauncher(),
      preloadModules: [],
      mplConfigDir: path.join(dir, ".matplotlib"),
      readyTimeoutMs: 30_000,
      nice: 10,
      log: pino({ level: "silent" }),
    });
    zygote.start();
  });
  afterAll(async () => {
    await zygote?.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** Forks one interpreter, checks it runs, ends it: false when the zygote did not fork. */
  async function forksOne(): Promise<boolean> {
    const forked = await zygote.fork(dir, { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir });
    if (!forked) return false;
    expect(forked.pid).toBeGreaterThan(0);
    process.kill(-forked.pid, "SIGKILL");
    expect((await forked.exited).signal).toBe("SIGKILL");
    for (const stream of [forked.stdout, forked.stderr, forked.replies, forked.control]) stream.destroy();
    return true;
  }

  it("starts again only when revived (after a scrub), and is given up after a few deaths a minute", async () => {
    expect(await forksOne()).toBe(true);
    for (let death = 1; death <= 4; death++) {
      const pid = zygote.pid!;
      const gone = waitFor(async () => zygote.pid === undefined, 10_000);
      process.kill(pid, "SIGKILL");
      await gone;
      // Down until revived: a restart on its own could read what a session wrote meanwhile.
      expect(await forksOne()).toBe(false);
      zygote.revive();
      // Three restarts a minute; the fourth death gives it up.
      expect(await forksOne()).toBe(death <= 3);
    }
  }, 60_000);
});

describe("--no-fork-interpreters", () => {
  let sandbox: TestSandbox;
  beforeAll(async () => {
    sandbox = await startTestSandbox({ forkInterpreters: false, preloadModules: ["fractions"] });
  });
  afterAll(() => sandbox?.close());

  it("starts each interpreter as the server's own child, preload modules imported", async () => {
    const id = await newSession(sandbox.client);
    const [parent, preloaded] = (await python(sandbox, id, PROBE)).stdout.trim().split(" ");
    expect(Number(parent)).toBe(process.pid);
    expect(preloaded).toBe("True");
  });
});
