/**
 * IPC objects outlive the processes that made them: System V shared memory, message queues
 * and semaphores live in the IPC namespace, POSIX message queues in /dev/mqueue.
 */
import { ipcKeyOf } from "../look-prelude.js";
import type { LeakProbe } from "../probe.js";
import { py } from "../probe.js";

/** Creates a System V object with the tag's key through libc (`get` is shmget, msgget or semget). */
function sysvProbe(table: "shm" | "msg" | "sem", call: string): LeakProbe {
  return {
    kind: "leak",
    name: `ipc.sysv-${table}`,
    claim: `System V ${{ shm: "shared memory segments", msg: "message queues", sem: "semaphores" }[table]} of a session are removed before the next`,
    plant: {
      stage: "early",
      code: (tag) => `
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
if ${call.replace("KEY", String(ipcKeyOf(tag)))} < 0:
    raise OSError(ctypes.get_errno(), 'could not create the object')
`,
    },
    look: { stage: "first", expression: (tag) => `sysv('${table}', ${ipcKeyOf(tag)})` },
  };
}

const IPC_CREAT = 0o1000;

export const ipcLeakProbes: LeakProbe[] = [
  sysvProbe("shm", `libc.shmget(KEY, 4096, ${IPC_CREAT | 0o600})`),
  sysvProbe("msg", `libc.msgget(KEY, ${IPC_CREAT | 0o600})`),
  sysvProbe("sem", `libc.semget(KEY, 1, ${IPC_CREAT | 0o600})`),
  {
    kind: "leak",
    name: "ipc.posix-mqueue",
    claim: "POSIX message queues (/dev/mqueue) of a session are removed before the next",
    plant: {
      stage: "early",
      code: (tag) => `
import ctypes, ctypes.util, os
rt = ctypes.CDLL(ctypes.util.find_library('rt') or 'librt.so.1', use_errno=True)
rt.mq_open.restype = ctypes.c_int
if rt.mq_open(${py(`/${tag}`)}.encode(), os.O_CREAT | os.O_RDWR, 0o600, None) < 0:
    raise OSError(ctypes.get_errno(), 'mq_open failed')
`,
    },
    look: {
      stage: "first",
      expression: (tag) => `named(${py(tag)}, ['/dev/mqueue'])`,
    },
  },
];
