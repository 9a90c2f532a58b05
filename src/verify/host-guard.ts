/**
 * Probes that start processes or write everywhere do so only inside a sandbox. Code that sees
 * kernel threads in /proc shares the host's PID namespace (the process runtime, or a
 * deployment without containers): there a planted daemon or fork bomb would run on the host
 * itself, as whoever runs the sandbox server. Such a probe fails at once, saying so, and
 * plants nothing.
 */
export const NOT_A_SANDBOX =
  "not a sandbox: the code shares the host's PID namespace (it sees kernel threads)";

/** Python that raises (the probe's error) when the code runs in the host's PID namespace. */
export const HOST_GUARD = `
import os as _os
def _sees_kernel_threads():
    for _name in _os.listdir('/proc'):
        if _name.isdigit():
            try:
                _fields = open('/proc/%s/stat' % _name).read().rsplit(')', 1)[1].split()
            except OSError:
                continue
            if int(_fields[6]) & 0x00200000:
                return True
    return False
if _sees_kernel_threads():
    raise SystemExit(${JSON.stringify(NOT_A_SANDBOX)})
`;
