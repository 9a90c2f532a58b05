/** Files a session leaves: in its workspace, /tmp, /dev/shm, and every other place it can write. */
import { HOST_GUARD } from "../host-guard.js";
import type { LeakProbe } from "../probe.js";
import { py } from "../probe.js";

/** Writes a tagged file and a tagged, locked directory (chmod 000: harder to remove) under `dir`. */
function plantUnder(dir: string, tag: string): string {
  return `
import os
d = ${dir}
open(os.path.join(d, ${py(tag)}), 'w').write('planted')
locked = os.path.join(d, '.' + ${py(tag)} + '-locked')
os.makedirs(os.path.join(locked, 'inner'), exist_ok=True)
open(os.path.join(locked, 'inner', 'f'), 'w').write('x')
os.chmod(os.path.join(locked, 'inner'), 0)
os.chmod(locked, 0o500)
`;
}

const WHOLE_TREE = "['/']";

export const fileLeakProbes: LeakProbe[] = [
  {
    kind: "leak",
    name: "files.workspace",
    claim: "files of a session's workspace are gone for the next session, and no other session can list them",
    plant: { stage: "early", code: (tag) => plantUnder("os.getcwd()", tag) },
    look: {
      stage: "first",
      expression: (tag) =>
        `named(${py(tag)}, [os.getcwd(), os.path.dirname(os.getcwd()), os.path.dirname(os.path.dirname(os.getcwd()))])`,
    },
  },
  {
    kind: "leak",
    name: "files.tmp",
    claim: "/tmp is empty for the next session, locked directories included",
    plant: { stage: "early", code: (tag) => plantUnder("'/tmp'", tag) },
    look: { stage: "first", expression: (tag) => `named(${py(tag)}, ['/tmp'])` },
  },
  {
    kind: "leak",
    name: "files.dev-shm",
    claim: "POSIX shared memory (/dev/shm) is empty for the next session",
    plant: {
      stage: "early",
      code: (tag) => `
import mmap, os
fd = os.open('/dev/shm/' + ${py(tag)}, os.O_CREAT | os.O_RDWR, 0o600)
os.ftruncate(fd, 4096)
mmap.mmap(fd, 4096).write(b'planted')
${plantUnder("'/dev/shm'", `${tag}d`)}
`,
    },
    look: { stage: "first", expression: (tag) => `named(${py(tag)}, ['/dev/shm'])` },
  },
  {
    kind: "leak",
    name: "files.everywhere-writable",
    claim: "no directory the code can write to keeps a file for the next session",
    plant: {
      stage: "early",
      code: (tag) => `${HOST_GUARD}
import os
for dirpath, dirnames, filenames in os.walk('/', onerror=lambda e: None):
    dirnames[:] = [d for d in dirnames if os.path.join(dirpath, d) not in ('/proc', '/sys')]
    if os.access(dirpath, os.W_OK | os.X_OK):
        try:
            open(os.path.join(dirpath, ${py(tag)}), 'w').write('planted')
        except OSError:
            pass
`,
    },
    look: { stage: "first", expression: (tag) => `named(${py(tag)}, ${WHOLE_TREE})` },
  },
];
