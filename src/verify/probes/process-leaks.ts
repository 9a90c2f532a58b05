/**
 * Processes and threads a session leaves running, in every state a scrub might skip: left
 * their group and session, double-forked daemons, a zombie leader whose threads live on,
 * stopped, traced, renamed, forking as fast as they can. All are planted in the session's
 * last call, so the scrub alone stands between them and the next session; each writes
 * /tmp/<tag>.beat while it runs (where it can), and carries its tag in its environment.
 */
import { HOST_GUARD } from "../host-guard.js";
import type { LeakProbe } from "../probe.js";
import { py } from "../probe.js";

/** Starts `script` (Python) in a new session, detached, with the tag in its environment. */
function detachedPython(tag: string, script: string): string {
  return `${HOST_GUARD}
import os, subprocess, sys
subprocess.Popen([sys.executable, '-c', ${py(script)}], env=dict(os.environ, SPV_TAG=${py(tag)}),
                 start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                 stderr=subprocess.DEVNULL, close_fds=True)
`;
}

/** The loop a planted process runs: it shows it is alive by writing its beat file. */
function beatLoop(tag: string, indent = ""): string {
  return [
    "import time",
    "while True:",
    "    try:",
    `        open('/tmp/${tag}.beat', 'w').close()`,
    "    except OSError:",
    "        pass",
    "    time.sleep(0.05)",
  ]
    .map((line) => indent + line)
    .join("\n");
}

function processProbe(name: string, claim: string, plant: (tag: string) => string): LeakProbe {
  return {
    kind: "leak",
    name,
    claim,
    beats: true,
    plant: { stage: "last", code: plant },
    look: { stage: "first", expression: (tag) => `carrying(${py(tag)}) + beating(${py(tag)})` },
  };
}

export const processLeakProbes: LeakProbe[] = [
  processProbe(
    "processes.background",
    "a process started in the background, in a session of its own (setsid nohup ... &), is ended with the session",
    (tag) => detachedPython(tag, beatLoop(tag)),
  ),
  processProbe(
    "processes.daemon",
    "a double-forked daemon that closed its files and left for / is ended with the session",
    (tag) =>
      detachedPython(
        tag,
        `import os\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        os.chdir('/')\n        os.closerange(0, 256)\n${beatLoop(tag, "        ")}\n    os._exit(0)\nos._exit(0)`,
      ),
  ),
  processProbe(
    "processes.zombie-leader-thread",
    "a thread whose process's main thread has exited (a zombie leader with live threads) is ended with the session",
    (tag) =>
      detachedPython(
        tag,
        `import ctypes, threading, time\ndef beat():\n${beatLoop(tag, "    ")}\nthreading.Thread(target=beat).start()\ntime.sleep(0.2)\nctypes.CDLL(None).syscall(60, 0)`,
      ),
  ),
  processProbe("processes.stopped", "a stopped process (SIGSTOP) is ended with the session", (tag) =>
    detachedPython(
      tag,
      "import os, signal\nos.kill(os.getpid(), signal.SIGSTOP)\nimport time\ntime.sleep(3600)",
    ),
  ),
  processProbe(
    "processes.traced",
    "a process stopped under ptrace, and its tracer, are ended with the session",
    (tag) =>
      detachedPython(
        tag,
        `import ctypes, os, signal\nif os.fork() == 0:\n    ctypes.CDLL(None).ptrace(0, 0, 0, 0)\n    os.kill(os.getpid(), signal.SIGSTOP)\n    os._exit(0)\n${beatLoop(tag)}`,
      ),
  ),
  processProbe(
    "processes.renamed",
    "a process that renamed itself after the sandbox's own programs is ended with the session",
    (tag) =>
      detachedPython(tag, `import ctypes\nctypes.CDLL(None).prctl(15, b'node', 0, 0, 0)\n${beatLoop(tag)}`),
  ),
  processProbe(
    "processes.forking",
    "a process that forks without pause (a child mid-fork at any moment) is ended with the session",
    (tag) =>
      detachedPython(
        tag,
        `import os, time\nwhile True:\n    try:\n        open('/tmp/${tag}.beat', 'w').close()\n        pid = os.fork()\n    except OSError:\n        time.sleep(0.01)\n        continue\n    if pid == 0:\n        time.sleep(0.02)\n        os._exit(0)\n    os.waitpid(pid, 0)`,
      ),
  ),
  {
    kind: "leak",
    name: "processes.none-left",
    claim: "when a session starts, no process or thread of the code's user runs but its own",
    everyCycle: true,
    plant: { stage: "last", code: () => "pass" },
    look: { stage: "first", expression: () => "user_threads()" },
  },
];
