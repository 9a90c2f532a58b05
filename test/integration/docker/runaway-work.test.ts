/**
 * Runaway work a tenant starts inside its docker sandbox never makes the session unusable:
 * a fork bomb (in the call's process group or setsid'd out of it), a Python thread that
 * keeps starting processes and spinning, and many small memory hogs. After each, the next
 * `print(1)` answers 200 within 2 s and the next bash call (which forks) works, because user
 * code runs under a uid of its own with a process cap (RLIMIT_NPROC) and a high OOM score,
 * and the server reaps what calls leave behind.
 *
 * The same runaways on both isolation levels. On gVisor (ptrace platform) a fork bomb may end
 * or break its own sandbox instead: every process inside is a stub process on the host, stubs
 * outlive the processes they served, and the sentry ends the sandbox once the host's pids
 * limit leaves it no thread, or answers file calls with EINVAL (docs/isolation.md). So there
 * the claim is containment: whatever becomes of the runaway's sandbox, a sibling sandbox on
 * the same engine keeps answering, and the next test gets a fresh one.
 *
 * Needs a Docker engine with gVisor registered and the image: skipped with a warning locally,
 * fails under CI=true. Everything it creates carries a per-file deployment label and is
 * removed in afterAll.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { isolationLevels } from "../../../src/policy-schema/isolation-levels.js";
import type { ContractClient } from "../../support/contract-client.js";
import { type DockerSandbox, startDockerSandbox } from "../../support/docker-sandbox.js";
import { gvisorSuiteAvailable, SANDBOX_IMAGE } from "../../support/docker-suite.js";
import { newSession } from "../../support/sandbox-server.js";

const available = await gvisorSuiteAvailable();

interface Content {
  stdout: string;
  stderr: string;
  return_code: number;
}

/** The sandbox's server answers GET /health. */
async function answersHealth(box: DockerSandbox): Promise<boolean> {
  return box.client.request("GET", "/health").then(
    (answer) => answer.status === 200,
    () => false,
  );
}

/** One Execute, its status and payload (whatever the status), and how long it took. */
async function timedExec(client: ContractClient, id: string, payload: Record<string, unknown>) {
  const started = Date.now();
  const answer = await client.exec(id, payload);
  const content = (answer.body as { result_block?: { content: Content } }).result_block?.content;
  return { status: answer.status, content, ms: Date.now() - started, text: answer.text };
}

describe.skipIf(!available).each(isolationLevels)(
  "runaway work stays inside the docker sandbox (%s)",
  (isolation) => {
    let box: DockerSandbox;
    /** gVisor only: a sandbox beside the runaway's, which must keep answering. */
    let sibling: DockerSandbox | undefined;
    let id: string;
    /** gVisor: the runaway's sandbox is spent; the next test starts a fresh one. */
    let spent = false;
    const start = () => startDockerSandbox(`runaway-${isolation}`, SANDBOX_IMAGE, isolation);

    beforeAll(async () => {
      box = await start();
      if (isolation === "gvisor") sibling = await start();
    }, 60_000);
    afterAll(async () => {
      await box?.close();
      await sibling?.close();
    });

    // One session per test (the server holds one at a time): what a test leaves running dies
    // with its session, so each starts from a clean interpreter.
    beforeEach(async () => {
      // A gVisor sandbox a runaway ended is replaced.
      if (isolation === "gvisor" && (spent || !(await answersHealth(box)))) {
        await box.close();
        box = await start();
        spent = false;
      }
      id = await newSession(box.client);
    }, 60_000);
    afterEach(async () => {
      if (isolation === "gvisor") await box.client.destroy(id).catch(() => undefined);
      else await box.client.destroy(id);
    });

    /** gVisor: whatever became of the runaway's sandbox, the sibling answers print(1). */
    async function expectContained(): Promise<void> {
      spent = true;
      const siblingId = await newSession(sibling!.client);
      const printed = await timedExec(sibling!.client, siblingId, {
        tool: "code_execution",
        input: { code: "print(1)" },
      });
      expect(printed.content).toMatchObject({ stdout: "1\n", return_code: 0 });
      await sibling!.client.destroy(siblingId);
    }

    /** print(1) answers 200 within 2 s. */
    async function expectPrintAnswers(): Promise<void> {
      const printed = await timedExec(box.client, id, {
        tool: "code_execution",
        input: { code: "print(1)" },
      });
      expect(printed.status, printed.text).toBe(200);
      expect(printed.content).toMatchObject({ stdout: "1\n", return_code: 0 });
      expect(printed.ms).toBeLessThan(2_000);
    }

    /** A bash call that forks (ls) works. */
    async function expectBashWorks(): Promise<void> {
      const forked = await timedExec(box.client, id, {
        tool: "bash_code_execution",
        input: { command: "echo ok; ls -d /tmp" },
        timeout_seconds: 10,
      });
      expect(forked.status, forked.text).toBe(200);
      expect(forked.content).toMatchObject({ stdout: "ok\n/tmp\n", return_code: 0 });
    }

    /**
     * Starts the runaway: its call answers 200, or, on gVisor only, the sandbox ended
     * (contained): then undefined, and the test has nothing more to check.
     */
    async function runaway(payload: Record<string, unknown>) {
      try {
        const answer = await timedExec(box.client, id, payload);
        expect(answer.status, answer.text).toBe(200);
        return answer;
      } catch (error) {
        if (isolation !== "gvisor") throw error;
        await expectContained();
        return undefined;
      }
    }

    /** The session is usable: print(1) in 2 s, and a bash call that forks works (on gVisor: or the sandbox ended, contained). */
    async function expectUsable(): Promise<void> {
      await contained(async () => {
        await expectPrintAnswers();
        await expectBashWorks();
      });
    }

    /** Runs the checks; on gVisor a sandbox that ended meanwhile passes if it is contained. */
    async function contained(checks: () => Promise<void>): Promise<void> {
      try {
        await checks();
      } catch (error) {
        if (isolation !== "gvisor") throw error;
        await expectContained();
      }
    }

    it("a fork bomb in bash, then print(1) answers within 2 s and bash works", async () => {
      // As reported, then one that holds every process it can for the rest of its call.
      for (const command of [":(){ :|:& };:", ":(){ :|:& };:; sleep 3"]) {
        const bomb = await runaway({ tool: "bash_code_execution", input: { command }, timeout_seconds: 5 });
        if (!bomb) return;
        await expectUsable();
        await expectUsable();
      }
    });

    it("a fork bomb setsid'd out of the call's process group does not outlive the call", async () => {
      const bomb = await runaway({
        tool: "bash_code_execution",
        input: { command: "setsid bash -c ':(){ :|:& };:' >/dev/null 2>&1 & sleep 1; echo started" },
        timeout_seconds: 5,
      });
      if (!bomb) return;
      await expectUsable();
      await expectUsable();
    });

    it("Python threads left fork-bombing and spinning do not stop later calls", async () => {
      const started = await runaway({
        tool: "code_execution",
        input: {
          code: [
            "import subprocess, threading",
            "def bomb():",
            "    while True:",
            "        try:",
            "            subprocess.run(['bash', '-c', ':(){ :|:& };:'])",
            "        except OSError:",
            "            pass",
            "def spin():",
            "    while True:",
            "        pass",
            "threading.Thread(target=bomb, daemon=True).start()",
            "threading.Thread(target=spin, daemon=True).start()",
            "print('left running')",
          ].join("\n"),
        },
      });
      if (!started) return;
      expect(started.content?.stdout).toBe("left running\n");
      // Time for the threads to take every process they can while no call runs; then bash
      // first, whose start needs a process of the server's own. (Its own forks may fail while
      // the thread keeps refilling the user's processes: only the call's start is the server's.)
      await contained(async () => {
        for (let round = 0; round < 2; round++) {
          await sleep(1_500);
          const echoed = await timedExec(box.client, id, {
            tool: "bash_code_execution",
            input: { command: "echo ok" },
            timeout_seconds: 10,
          });
          expect(echoed.status, echoed.text).toBe(200);
          expect(echoed.content).toMatchObject({ stdout: "ok\n", return_code: 0 });
          await expectPrintAnswers();
        }
      });
    });

    it("many small memory hogs past the container's memory do not take the server down", async () => {
      // 40 x ~25 MiB: each smaller than the server, together well past the 512 MiB limit, so
      // the kernel's OOM killer must pick among them, never the server.
      const hogs = await runaway({
        tool: "bash_code_execution",
        input: {
          command:
            "for i in $(seq 40); do python3 -c 'import time; b = b\"x\" * (18 * 2**20); time.sleep(30)' & done; sleep 6; echo done",
        },
        timeout_seconds: 20,
      });
      if (!hogs) return;
      expect(hogs.content?.stdout).toBe("done\n");
      await expectUsable();
    });
  },
);
