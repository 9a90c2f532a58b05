/**
 * What a session's code can do to time it is not charged for and to the calls after it: burn
 * CPU after its call returned, or fill the process table with a fork bomb.
 */
import type { CheckProbe } from "../probe.js";
import { runJson } from "../probe.js";

/** How long the next call may take after a fork bomb before the deployment counts as harmed. */
const NEXT_CALL_WITHIN_MS = 15_000;

export const resourceChecks: CheckProbe[] = [
  {
    kind: "check",
    name: "resources.cpu-after-return",
    claim: "a process left spinning when a call returns does not run on between calls",
    async run(context) {
      const session = await context.session();
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
    claim: "a fork bomb is bounded: the next call of the session answers, and promptly",
    async run(context) {
      const session = await context.session();
      const bomb = await session.client.tool(
        session.id,
        "code_execution",
        `
import os, time
made = 0
deadline = time.time() + 3
while time.time() < deadline:
    try:
        if os.fork() == 0:
            while True:
                try:
                    os.fork()
                except OSError:
                    time.sleep(0.5)
        made += 1
    except OSError:
        time.sleep(0.05)
print('forked', made)
`,
        5,
      );
      const started = Date.now();
      const next = await session.client.tool(session.id, "bash_code_execution", "echo still-here", 30);
      const tookMs = Date.now() - started;
      const answered = next.stdout.includes("still-here");
      return {
        pass: answered && tookMs <= NEXT_CALL_WITHIN_MS,
        evidence: `the bomb's call returned ${bomb.returnCode} (${bomb.stdout.trim() || bomb.stderr.trim().slice(-120) || "no output"}); the next call ${answered ? "answered" : "did not answer"} in ${tookMs} ms`,
      };
    },
  },
];
