/**
 * The Python every looking call of `sandpool verify` starts with: helpers the leak probes'
 * look expressions use. It reads /proc and the file system only; it starts nothing, so what it
 * finds was there before it ran.
 */
export const LOOK_PRELUDE = `
import json, os, time

def _read(path, text=False):
    try:
        with open(path, 'r' if text else 'rb') as f:
            return f.read()
    except Exception:
        return '' if text else b''

def _ppid(pid):
    stat = _read('/proc/%d/stat' % pid, True)
    return int(stat.rsplit(')', 1)[1].split()[1]) if stat else 0

def _ancestors():
    chain, pid = set(), os.getpid()
    while pid > 0 and pid not in chain:
        chain.add(pid)
        pid = _ppid(pid)
    return chain

def _tasks():
    """(pid, tid) of every thread of every process but this one and its ancestors."""
    mine = _ancestors()
    for name in os.listdir('/proc'):
        if not name.isdigit() or int(name) in mine:
            continue
        try:
            tids = os.listdir('/proc/%s/task' % name)
        except OSError:
            continue
        for tid in tids:
            yield int(name), int(tid)

def _state(pid, tid):
    stat = _read('/proc/%d/task/%d/stat' % (pid, tid), True)
    return stat.rsplit(')', 1)[1].split()[0] if stat else '?'

def _real_uid(pid):
    for line in _read('/proc/%d/status' % pid, True).splitlines():
        if line.startswith('Uid:'):
            return int(line.split()[1])
    return -1

def carrying(tag):
    """Threads whose environment, command line or name carries the tag."""
    found, needle = [], tag.encode()
    for pid, tid in _tasks():
        base = '/proc/%d/task/%d/' % (pid, tid)
        blob = _read(base + 'environ') + b'\\0' + _read(base + 'cmdline') + b'\\0' + _read(base + 'comm')
        if needle in blob:
            found.append('pid %d thread %d (state %s) carries the tag' % (pid, tid, _state(pid, tid)))
    return found

def user_threads():
    """Every thread of a process of this code's uid but this process and its ancestors."""
    me, found = os.getuid(), []
    for pid, tid in _tasks():
        if _real_uid(pid) == me:
            comm = _read('/proc/%d/task/%d/comm' % (pid, tid), True).strip()
            found.append('pid %d thread %d %s (state %s)' % (pid, tid, comm, _state(pid, tid)))
    return found

BEAT_WAIT = 0.5
def clear_beats(tags):
    for tag in tags:
        try:
            os.remove('/tmp/%s.beat' % tag)
        except OSError:
            pass

def beating(tag):
    path = '/tmp/%s.beat' % tag
    return ['%s was written again within %.1f s' % (path, BEAT_WAIT)] if os.path.exists(path) else []

def named(tag, roots):
    """Paths under the roots whose name holds the tag (a walk that skips /proc and /sys)."""
    found = []
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root, onerror=lambda e: None):
            dirnames[:] = [d for d in dirnames if os.path.join(dirpath, d) not in ('/proc', '/sys')]
            for name in dirnames + filenames:
                if tag in name:
                    found.append(os.path.join(dirpath, name))
    return found

def sysv(table, key):
    rows = _read('/proc/sysvipc/' + table, True).splitlines()[1:]
    return ['/proc/sysvipc/%s lists key %d' % (table, key) for row in rows if row.split() and int(row.split()[0]) == key]
`;

/** A System V IPC key from a tag: the same in the plant and the look. */
export function ipcKeyOf(tag: string): number {
  let hash = 7;
  for (const char of tag) hash = (hash * 31 + char.charCodeAt(0)) % 2_000_000_000;
  return hash + 1;
}
