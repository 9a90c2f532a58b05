/**
 * The program a session's persistent Python interpreter runs. It reads one JSON request a
 * line from fd 3, runs the code in one namespace that lives as long as the process, and
 * answers on fd 4. After each call it writes an end marker to stdout and stderr, so the
 * server knows when all of the call's output (its subprocesses' too) has arrived.
 *
 * SIGINT raises KeyboardInterrupt only while user code runs, so a timeout that fires just
 * as a call ends cannot break the driver loop. A call whose working directory was deleted
 * (the workspace removed and recreated) starts in the workspace again.
 */
export const pythonDriverSource = String.raw`
import json, os, signal, sys

CTL_IN, CTL_OUT = 3, 4
for fd in (CTL_IN, CTL_OUT):
    os.set_inheritable(fd, False)
ctl_in = os.fdopen(CTL_IN, "r", encoding="utf-8")
ctl_out = os.fdopen(CTL_OUT, "w", encoding="utf-8")
del fd, CTL_IN, CTL_OUT

running = False

def _on_sigint(signum, frame):
    if running:
        raise KeyboardInterrupt

signal.signal(signal.SIGINT, _on_sigint)

namespace = {"__name__": "__main__", "__builtins__": __builtins__}

def _user_traceback(exc):
    import traceback  # only when needed: it costs start-up time
    # Leave out the driver's own frames: the one that ran the cell (first) and, for a
    # timeout, the SIGINT handler that raised KeyboardInterrupt (last), so the traceback
    # starts in the user's cell and ends where the user's code was interrupted.
    shown = traceback.TracebackException(type(exc), exc, exc.__traceback__)
    shown.stack = traceback.StackSummary.from_list(
        [frame for frame in shown.stack if frame.filename != _run.__code__.co_filename]
    )
    print("".join(shown.format()), end="", file=sys.stderr)

def _exit_code(exc):
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=sys.stderr)
    return 1

def _run(code):
    global running
    try:
        compiled = compile(code, "<cell>", "exec")
    except (SyntaxError, ValueError, OverflowError) as exc:
        import traceback
        traceback.print_exception(type(exc), exc, None, file=sys.stderr)
        return 1
    running = True
    try:
        exec(compiled, namespace)
        return 0
    except SystemExit as exc:
        return _exit_code(exc)
    except KeyboardInterrupt as exc:
        _user_traceback(exc)
        return 130
    except BaseException as exc:
        _user_traceback(exc)
        return 1
    finally:
        running = False

# The workspace (the server sets HOME to it; read before user code can change it): where a
# call starts again if code in the sandbox deleted the directory it was in (the server
# recreates the workspace; a deleted cwd would fail every relative path).
_home = os.environ.get("HOME", "/")

def _cwd_exists():
    try:
        os.getcwd()
        return True
    except OSError:
        return False

for line in ctl_in:
    request = json.loads(line)
    if not _cwd_exists():
        try:
            os.chdir(_home)
        except OSError:
            pass
    return_code = _run(request["code"])
    marker = request["marker"].encode()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    os.write(1, marker)
    os.write(2, marker)
    ctl_out.write(json.dumps({"id": request["id"], "return_code": return_code}) + "\n")
    ctl_out.flush()
`;
