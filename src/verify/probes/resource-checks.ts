/**
 * What a session's code can do to time it is not charged for and to the calls after it: burn
 * CPU after its call returned, or fill the process table with a fork bomb.
 */
import { HOST_GUARD } from "../host-guard.js";
import type { CheckProbe, ProbeSession } from "../probe.js";
import { runJson } from "../probe.js";

/** Throws (the probe fails, saying why) where the code runs on the host, not in a sandbox. */
async function sandboxed(session: ProbeSession): Promise<ProbeSession> {
  await runJson(session, `${HOST_GUARD}\nimport json\nprint(json.dumps(True))`);
  return session;
}

/** Forks without end: every child forks again; each that cannot sleeps and tries again. */
const FORK_BOMB = `
import os, time
deadline = time.time() + 3
while time.time() < deadline:
    try:
        os.fork()
    except OSError:
        time.sleep(0.05)
print('bombed')
`;

async function timed<T>(call: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = Date.now();
  const value = await call();
  return { value, ms: Date.now() - started };
}

function isContractError(text: string): boolean {
  try {
    const detail = (JSON.parse(text) as { detail?: { code?: unknown } }).detail;
    return typeof detail?.code === "string";
  } catch {
    return false;
  }
}

/** How long a call may take after a fork bomb before the deployment counts as harmed. */
const NEXT_CALL_WITHIN_MS = 15_000;

export const resourceChecks: CheckProbe[] = [
  {
    kind: "check",
    name: "resources.cpu-after-return",
    claim: "a process left spinning when a call returns does not run on between calls",
    async run(context) {
      const session = await sandboxed(await context.session());
      await runJson(
        session,
        `
import json, os, subprocess, sys
subprocess.Popen([sys.executable, '-c', 'while True: pass'], start_new_session=True,
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(json.dumps('started'))
`,
      );
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const spinners = await runJson<string[]>(
        session,
        `
import json, os
found = []
for pid in filter(str.isdigit, os.listdir('/proc')):
    try:
        cmd = open('/proc/%s/cmdline' % pid, 'rb').read()
    except OSError:
        continue
    if b'while True: pass' in cmd and int(pid) != os.getpid():
        found.append('pid %s spins: %s' % (pid, cmd.replace(b'\\0', b' ').decode()))
print(json.dumps(found))
`,
      );
      return {
        pass: spinners.length === 0,
        evidence: spinners.length === 0 ? "the spinner was gone by the next call" : spinners.join("; "),
      };
    },
  },
  {
    kind: "check",
    name: "resources.fork-bomb",
    claim:
      "a fork bomb harms only its own session: a neighbouring session answers promptly, and the bombed session's next call answers or fails cleanly, never hangs",
    async run(context) {
      const neighbour = await sandboxed(await context.session());
      const session = await sandboxed(await context.session());
      const bomb = await session.client.exec(session.id, {
        tool: "code_execution",
        input: { code: FORK_BOMB },
        timeout_seconds: 5,
      });
      const neighbourAnswer = await timed(() =>
        neighbour.client.tool(neighbour.id, "bash_code_execution", "echo still-here", 30),
      );
      const next = await timed(() =>
        session.client.exec(session.id, {
          tool: "bash_code_execution",
          input: { command: "echo still-here" },
          timeout_seconds: 30,
        }),
      );
      const neighbourOk =
        neighbourAnswer.value.stdout.includes("still-here") && neighbourAnswer.ms <= NEXT_CALL_WITHIN_MS;
      // Its own sandbox may be broken by it (gVisor): then an error in the contract's shape, at once.
      const nextClean =
        next.value.status === 200 ? next.value.text.includes("still-here") : isContractError(next.value.text);
      return {
        pass: neighbourOk && nextClean && next.ms <= NEXT_CALL_WITHIN_MS,
        evidence: `the bomb's call answered ${bomb.status}; a neighbouring session answered in ${neighbourAnswer.ms} ms${neighbourOk ? "" : " (too slow or wrong)"}; the bombed session's next call answered ${next.value.status} in ${next.ms} ms${nextClean ? "" : `: ${next.value.text.slice(0, 120)}`}`,
      };
    },
  },
];
