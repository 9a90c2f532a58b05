/**
 * Issue 40's first attack, through the gateway's reuse path: a session leaves processes the
 * stray reaper once skipped, then ends; its workspace's next session gets the same (scrubbed)
 * container and must find no thread of them running, nor anything they write coming back.
 *
 * - a zombie leader with a live thread: a forked child does setsid, starts a thread that
 *   writes /tmp/zl-mark every 20 ms, and its main thread calls SYS_exit (the leader shows Z,
 *   its thread runs on);
 * - a stopped one (SIGSTOP, renamed), which writes a mark if it is ever continued;
 * - a traced one (PTRACE_TRACEME, then stopped: its tracer, a setsid'd daemon, never resumes it).
 *
 * Planted twice: during the call (the issue's repro as it was filed) and from a timer thread
 * of the interpreter after the call returned (so no reap after a call sees them and the scrub
 * alone must end them: `docker exec` checks they are there before the session ends). On a
 * container pool and on a gvisor pool. `sandpool serve` with docker sandboxes, Redis, Postgres.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Isolation, isolationLevels } from "../../../src/policy-schema/isolation-levels.js";
import type { RedisCoordinationStore } from "../../../src/store/coordination/redis/redis-store.js";
import type { CliServer } from "../../support/cli.js";
import type { ContractClient } from "../../support/contract-client.js";
import { gvisorSuiteAvailable } from "../../support/docker-suite.js";
import {
  createServeDeployment,
  type ServeDeployment,
  serveStackAvailable,
} from "../../support/serve-deployment.js";
import { waitFor } from "../../support/wait-for.js";
import { putWorkspacePolicy } from "../../support/workspace-policy.js";

const run = promisify(execFile);
const available = (await serveStackAvailable()) && (await gvisorSuiteAvailable());

const CONFIG = `
pools:
  - name: default
    image: sandpool/sandbox:dev
    minIdle: 1
    maxTotal: 3
    coldStartTimeoutMs: 60000
  - name: gv
    image: sandpool/sandbox:dev
    isolation: gvisor
    minIdle: 1
    maxTotal: 2
    coldStartTimeoutMs: 60000
runtime:
  docker:
    preloadModules: []
intervals:
  warmMs: 500
  reapMs: 500
  reconcileMs: 5000
  orphanGraceMs: 70000
`;

/** Python that plants the three leftovers; each `fork` returns in the parent at once. */
const PLANTERS = `
import os, threading, time, ctypes, signal
libc = ctypes.CDLL(None, use_errno=True)

def zombie_leader():
    if os.fork() == 0:
        os.setsid()
        def plant():
            while True:
                try:
                    open('/tmp/zl-mark', 'w').write('x')
                except OSError:
                    pass
                time.sleep(0.02)
        threading.Thread(target=plant).start()
        time.sleep(0.2)
        libc.syscall(60, 0)   # SYS_exit: only the main thread leaves

def stopped():
    if os.fork() == 0:
        os.setsid()
        libc.prctl(15, b'kworker/0:1', 0, 0, 0)   # PR_SET_NAME: a name that looks harmless
        os.kill(os.getpid(), signal.SIGSTOP)
        open('/tmp/stopped-mark', 'w').write('continued')
        os._exit(0)

def traced():
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            libc.ptrace(0, 0, 0, 0)   # PTRACE_TRACEME: its parent is its tracer
            os.kill(os.getpid(), signal.SIGSTOP)
            while True:
                open('/tmp/traced-mark', 'w').write('resumed')
                time.sleep(0.02)
        while True:
            time.sleep(1)   # the tracer, which never resumes it

def plant_all():
    zombie_leader(); stopped(); traced()
`;

/**
 * Every process of the code's uid but `me`, as `pid:state:threads`, from each `stat` (gVisor
 * lists a zombie leader with a live thread but gives it no task/ and `ps` shows nothing of it;
 * field 20, the group's thread count, is right on both kernels).
 */
const LIST_PROCESSES = `
import os
def processes(uid, me):
    found = []
    for pid in os.listdir('/proc'):
        if not pid.isdigit() or int(pid) == me:
            continue
        try:
            real = int([l for l in open(f'/proc/{pid}/status') if l.startswith('Uid:')][0].split()[1])
            fields = open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()
        except (OSError, IndexError):
            continue
        if real == uid:
            found.append(f'{pid}:{fields[0]}:{fields[17]}')
    return found
`;

/** What the next session looks for: a thread of the code's uid but its own, and the marks. */
const LOOK = `${LIST_PROCESSES}
import time
time.sleep(1.0)
running = [p for p in processes(os.getuid(), os.getpid()) if p.split(':')[1] not in 'ZX' or p.split(':')[2] != '1']
marks = [m for m in ('zl-mark', 'stopped-mark', 'traced-mark') if os.path.exists('/tmp/' + m)]
print('threads', running)
print('marks', marks)
`;

describe.skipIf(!available)("leftover processes in every state, and sandbox reuse (serve, docker)", () => {
  let deployment: ServeDeployment;
  let replica: CliServer;
  let store: RedisCoordinationStore;

  beforeAll(async () => {
    deployment = await createServeDeployment(CONFIG);
    replica = await deployment.startReplica();
    store = await deployment.store();
  }, 180_000);
  afterAll(() => deployment?.close(), 120_000);

  const POOL: Record<Isolation, string> = { container: "default", gvisor: "gv" };

  async function setPolicy(workspace: string, edit: Record<string, unknown>) {
    const answer = await putWorkspacePolicy(replica.url, workspace, edit);
    expect(answer.status).toBe(200);
  }

  async function oneSession(client: ContractClient, workspace: string) {
    const created = await client.createSession();
    expect(created.status).toBe(201);
    const id = (created.body as { session_id: string }).session_id;
    const lease = await store.getLease({ workspace, sessionId: id });
    if (!lease) throw new Error(`no lease for ${id}`);
    return { id, container: lease.sandbox.runtimeId };
  }

  /** The code's processes in the container, seen from the engine (LIST_PROCESSES): `pid:state:threads`. */
  async function leftoversIn(runtimeId: string, uid: number): Promise<string[]> {
    const container = runtimeId.split(":").at(-1)!;
    const script = `${LIST_PROCESSES}\nprint(' '.join(processes(${uid}, -1)))`;
    const { stdout } = await run("docker", ["exec", container, "python3", "-c", script]);
    return stdout.trim().split(" ").filter(Boolean);
  }

  async function endAndReuse(
    client: ContractClient,
    workspace: string,
    isolation: Isolation,
    first: { id: string; container: string },
  ) {
    expect((await client.request("DELETE", `/sessions/${first.id}`)).status).toBe(204);
    await waitFor(
      async () =>
        (await store.listParked(POOL[isolation])).some(
          (record) => record.owner === workspace && record.runtimeId === first.container,
        ),
      30_000,
      "the sandbox parked",
    ).catch((error: Error) => {
      throw new Error(`${error.message}; the replica said: ${replica.output().stderr.slice(-3000)}`);
    });
    const second = await oneSession(client, workspace);
    expect(second.container).toBe(first.container);
    const seen = await client.run(second.id, "code_execution", { code: LOOK });
    expect(seen.stdout).toBe("threads []\nmarks []\n");
    await client.request("DELETE", `/sessions/${second.id}`);
  }

  describe.each(isolationLevels)("on %s isolation", (isolation) => {
    const workspace = `leftovers-${isolation}`;
    beforeAll(async () => {
      if (isolation === "gvisor") await setPolicy(workspace, { isolation: "gvisor" });
    });

    it("runs nothing of the issue's repro (a zombie leader with a live thread) in the next session", async () => {
      const client = await deployment.client(replica, workspace);
      const first = await oneSession(client, workspace);
      const planted = await client.run(first.id, "code_execution", {
        code: `${PLANTERS}\nzombie_leader()\ntime.sleep(1.5)\nprint(os.path.exists('/tmp/zl-mark'))`,
      });
      expect(planted.stdout).toBe("True\n");
      await endAndReuse(client, workspace, isolation, first);
    }, 120_000);

    it("runs nothing of a zombie leader, a stopped and a traced process planted after the call returned", async () => {
      const client = await deployment.client(replica, workspace);
      const first = await oneSession(client, workspace);
      const started = await client.run(first.id, "code_execution", {
        code: `${PLANTERS}\nthreading.Timer(0.3, plant_all).start()\nprint(os.getuid())`,
      });
      const uid = Number(started.stdout.trim());
      // The call has returned: they are there, and only the scrub can end them.
      let seen: string[] = [];
      await waitFor(
        async () => {
          seen = await leftoversIn(first.container, uid);
          const states = seen.map((process) => process.split(":"));
          return (
            states.some(([, state, threads]) => state === "Z" && threads === "2") &&
            states.some(([, state]) => state === "T") &&
            states.some(([, state]) => state === "t")
          );
        },
        10_000,
        "the leftovers planted",
      ).catch((error: Error) => {
        throw new Error(`${error.message}: ${seen.join(" ")}`);
      });
      await endAndReuse(client, workspace, isolation, first);
    }, 120_000);
  });
});
