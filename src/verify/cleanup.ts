/**
 * What a run planted and a deployment kept is removed at the end of each planting cycle, from a
 * fresh session of the planting workspace (which reuse puts on the same sandbox): processes
 * that carry a tag, tagged files in the places the probes write, and the tagged System V
 * objects. Best effort: a deployment that leaks has already failed the probe.
 */
import { ipcKeyOf } from "./look-prelude.js";
import { py } from "./probe.js";

export function cleanupProgram(tags: readonly string[]): string {
  const keys = tags.map(ipcKeyOf);
  return `
import ctypes, json, os, shutil, signal
tags = json.loads(${py(JSON.stringify(tags))})
keys = json.loads(${py(JSON.stringify(keys))})
removed = 0
for name in os.listdir('/proc'):
    if not name.isdigit() or int(name) == os.getpid():
        continue
    try:
        tids = os.listdir('/proc/%s/task' % name)
    except OSError:
        continue
    for tid in tids:
        try:
            blob = open('/proc/%s/task/%s/environ' % (name, tid), 'rb').read()
        except OSError:
            continue
        if any(t.encode() in blob for t in tags):
            try:
                os.kill(int(name), signal.SIGKILL)
                removed += 1
            except OSError:
                pass
            break
def unlock(path):
    for dirpath, dirnames, filenames in os.walk(path):
        os.chmod(dirpath, 0o700)
for root in ('/tmp', '/dev/shm', '/dev/mqueue', os.path.dirname(os.path.dirname(os.getcwd()))):
    try:
        names = os.listdir(root)
    except OSError:
        continue
    for name in names:
        if any(t in name for t in tags):
            path = os.path.join(root, name)
            try:
                if os.path.isdir(path) and not os.path.islink(path):
                    os.chmod(path, 0o700)
                    unlock(path)
                    shutil.rmtree(path)
                else:
                    os.remove(path)
                removed += 1
            except OSError:
                pass
libc = ctypes.CDLL(None)
IPC_RMID = 0
for key in keys:
    for ident, remove in ((libc.shmget(key, 0, 0), lambda i: libc.shmctl(i, IPC_RMID, None)),
                          (libc.msgget(key, 0), lambda i: libc.msgctl(i, IPC_RMID, None)),
                          (libc.semget(key, 0, 0), lambda i: libc.semctl(i, 0, IPC_RMID))):
        if ident >= 0 and remove(ident) == 0:
            removed += 1
print(json.dumps(removed))
`;
}
