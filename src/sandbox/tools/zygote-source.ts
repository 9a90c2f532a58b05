/**
 * The program of a sandbox's interpreter zygote (interpreter-zygote.ts): one Python process
 * that imports the preload modules once, then forks each session's interpreter from itself,
 * so a new session costs a fork (milliseconds) instead of a Python start and an import of
 * pandas. It never runs user code; each child becomes a fresh interpreter of its own.
 *
 * Its argument is a JSON object: `uid`/`gid` (the code's identity, or null: the process
 * runtime), `maxProcesses` (RLIMIT_NPROC of user code, or null), `nice`, `preload` (module
 * names), `mplConfigDir` and `driver` (the session interpreter's program, python-driver.ts).
 *
 * Identity. With a code user, the zygote has the server's own identity: real and saved uid
 * root, effective uid the code's (exec makes the saved uid the effective one; it takes root
 * back at once). So user code, all of whose uids are the code's, can neither signal it nor
 * trace it, read or write its memory, change its limits or its I/O priority: the kernel
 * checks those against the target's real (and saved) uid. Three checks look at the effective
 * uid only: renice, CPU affinity and scheduling policy. The zygote therefore compares those
 * with what it started with before every fork, and exits instead of forking when one
 * changed (the server starts a fresh one): no session's code reaches what the next one gets.
 * What the preload imports write belongs to the code's uid, so a scrub can delete it.
 *
 * Protocol, one JSON object a line. On fd 3 the server asks `{"id", "cwd", "env"}`. On fd 4
 * the zygote answers `{"ready": true, "loaded": [...]}` once, then `{"id", "pid"}` after a
 * fork (or `{"id", "error"}`), `{"exit": pid, "code", "signal"}` when it reaped a child; the
 * child itself writes `{"id", "pid", "ready": true}` once its pipes are in place, and waits
 * for one empty line on its control pipe (the server has opened its ends). Each line is
 * one write of less than PIPE_BUF bytes, so writers never interleave.
 *
 * A child: a session of its own (setsid: its own process group), the code's uid and gid in
 * every slot (as setpriv does for a started one: it clears every capability; checked), dumpable again (the server opens its
 * pipes through /proc/<pid>/fd, as the code's uid), RLIMIT_NPROC, fresh pipes on fds 1-4
 * (stdin /dev/null), every other descriptor closed, the session's workspace as its cwd, exactly
 * the environment the server sent, random generators reseeded, and the driver run as a new
 * `__main__`. The server reads and writes those pipes by opening the child's /proc/<pid>/fd.
 */
export const zygoteSource = String.raw`
import json, os, select, signal, sys

def _main():
    config = json.loads(sys.argv[1])
    del sys.argv[1:]
    ctl_in, ctl_out = 3, 4
    for fd in (ctl_in, ctl_out):
        os.set_inheritable(fd, False)
    uid, gid = config.get("uid"), config.get("gid")
    confined = uid is not None
    if confined:
        if os.getresuid()[1] != uid:
            # gVisor gives a program the server starts uid 0 in every slot and no capability:
            # such a zygote could not give its children the code's uid. Interpreters start alone.
            print("the zygote does not have the code's effective uid here", file=sys.stderr)
            sys.exit(3)
        os.setresuid(-1, -1, 0)
        os.nice(config["nice"])
        try:
            with open("/proc/self/oom_score_adj", "w") as f:
                f.write("1000")
        except OSError:
            pass
    loaded = _preload(config["preload"], config["mplConfigDir"])
    baseline = _attributes()
    # Everything a child needs is imported here, never from a directory user code can write.
    import atexit, builtins, fcntl, resource, traceback, types  # noqa: F401
    # Made once, not in every child (on a virtual machine compiling the driver took a child
    # 7 ms of CPU, and loading libc for prctl 2.5 ms: a third of what a fork cost in all).
    prepared = {"driver": compile(config["driver"], "<string>", "exec")}
    if confined:
        import ctypes
        prepared["prctl"] = ctypes.CDLL(None, use_errno=True).prctl
    # What a child imports, handed over rather than imported again: an import statement walks
    # the import machinery, and in a forked child every object it touches is a page copied.
    prepared["modules"] = (builtins, fcntl, resource, types)
    # The environment every child starts from: a child changes only the variables its request's
    # differs in (HOME, mostly), where emptying and refilling os.environ cost it 3 ms of CPU.
    # Taken last: nothing changes the zygote's environment after this.
    prepared["env"] = dict(os.environ)
    # Objects the children share with the zygote are left alone by their garbage collector: a
    # collection writes into every object it looks at, so a child's full collection would copy
    # every page of the zygote's heap (pandas' too). Collected once first, so nothing freezes
    # that is garbage already.
    import gc
    gc.collect()
    gc.freeze()
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    for fd in (wake_r, wake_w):
        os.set_inheritable(fd, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    _send(ctl_out, {"ready": True, "loaded": loaded})
    buffered = b""
    while True:
        try:
            readable, _, _ = select.select([ctl_in, wake_r], [], [])
        except InterruptedError:
            continue
        if wake_r in readable:
            try:
                os.read(wake_r, 512)
            except BlockingIOError:
                pass
        _reap(ctl_out)
        if ctl_in not in readable:
            continue
        chunk = os.read(ctl_in, 65536)
        if not chunk:
            return  # the server is gone
        buffered += chunk
        while b"\n" in buffered:
            line, buffered = buffered.split(b"\n", 1)
            request = json.loads(line)
            if _attributes() != baseline:
                _send(ctl_out, {"id": request["id"], "error": "the zygote's priority, affinity or policy changed"})
                sys.exit(3)
            try:
                pid = os.fork()
            except OSError as exc:
                _send(ctl_out, {"id": request["id"], "error": str(exc)})
                continue
            if pid == 0:
                _become_child(request, config, prepared, ctl_out)
            _send(ctl_out, {"id": request["id"], "pid": pid})

def _attributes():
    # What a process of the code's effective uid may change in this one (see the comment above).
    return (
        os.getpriority(os.PRIO_PROCESS, 0),
        sorted(os.sched_getaffinity(0)),
        os.sched_getscheduler(0),
        os.sched_getparam(0).sched_priority,
    )

def _send(fd, message):
    os.write(fd, (json.dumps(message) + "\n").encode())

def _reap(ctl_out):
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if os.WIFSIGNALED(status):
            _send(ctl_out, {"exit": pid, "code": None, "signal": os.WTERMSIG(status)})
        else:
            _send(ctl_out, {"exit": pid, "code": os.WEXITSTATUS(status), "signal": None})

def _preload(names, mpl_config_dir):
    if not names:
        return []
    import importlib
    os.environ.setdefault("MPLBACKEND", "Agg")
    os.environ.setdefault("MPLCONFIGDIR", mpl_config_dir)
    os.makedirs(os.environ["MPLCONFIGDIR"], mode=0o700, exist_ok=True)
    loaded = []
    for name in names:
        try:
            importlib.import_module(name)
            loaded.append(name)
        except Exception:
            pass
    return loaded

def _become_child(request, config, prepared, ctl_out):
    code = 1
    try:
        report, spare_writer = _fresh_process(request, config, prepared, ctl_out)
        driver = prepared["driver"]
        builtins, _, _, types = prepared["modules"]
        main = types.ModuleType("__main__")
        main.__dict__["__builtins__"] = builtins
        sys.modules["__main__"] = main
        sys.argv[:] = ["-c"]
        _send(report, {"id": request["id"], "pid": os.getpid(), "ready": True})
        os.close(report)
        # Only now may the server (and, alike, the code's uid) open this process's pipes through
        # /proc: the zygote's answer pipe is closed. The server retries until this is done.
        if config.get("uid") is not None:
            PR_SET_DUMPABLE = 4
            prepared["prctl"](PR_SET_DUMPABLE, 1, 0, 0, 0)
        # The server opens its ends of the pipes, then writes one empty line: till then this
        # child holds the control pipe's only writer, so the driver does not read an end of file.
        while os.read(3, 1) not in (b"\n", b""):
            pass
        os.close(spare_writer)
        exec(driver, main.__dict__)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        import traceback
        traceback.print_exc()
    finally:
        try:
            import atexit
            atexit._run_exitfuncs()
        except BaseException:
            pass
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        os._exit(code)

def _fresh_process(request, config, prepared, ctl_out):
    _, fcntl, resource, _ = prepared["modules"]
    os.setsid()
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    # Every descriptor but the child's own is closed before it takes the code's uid: from then
    # on a process of that uid may open what the child holds, once it is dumpable (below).
    # Answers to the server go on a descriptor above the ones the child's pipes take.
    report = fcntl.fcntl(ctl_out, fcntl.F_DUPFD_CLOEXEC, 10)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    in_r, in_w = os.pipe()
    rep_r, rep_w = os.pipe()
    null = os.open(os.devnull, os.O_RDONLY)
    for source, target in ((null, 0), (out_w, 1), (err_w, 2), (in_r, 3), (rep_w, 4)):
        os.dup2(source, target)
    # Listed, not closed by range: os.closerange falls back to one close() per number up to its
    # bound where close_range(2) is refused (an engine's older seccomp profile), a million
    # system calls a fork.
    keep = {0, 1, 2, 3, 4, report, in_w}
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass
    uid, gid = config.get("uid"), config.get("gid")
    if uid is not None:
        # Already so (the server dropped them), and setting them would take a capability.
        if os.getgroups():
            raise SystemExit(126)
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
        if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid) or os.getgroups():
            raise SystemExit(126)
        # Read raw: a text file object costs a fresh child a millisecond more.
        status_fd = os.open("/proc/self/status", os.O_RDONLY)
        try:
            status = os.read(status_fd, 65536)
        finally:
            os.close(status_fd)
        caps = [line.split()[1] for line in status.split(b"\n") if line.startswith((b"CapPrm", b"CapEff", b"CapAmb"))]
        if len(caps) != 3 or any(int(value, 16) != 0 for value in caps):
            raise SystemExit(126)
        if config.get("maxProcesses") is not None:
            limit = config["maxProcesses"]
            resource.setrlimit(resource.RLIMIT_NPROC, (limit, limit))
    os.chdir(request["cwd"])
    # Exactly the request's environment (and matplotlib's defaults, as the zygote's import had
    # them): os.environ holds the zygote's (prepared["env"]) until here; only what differs is
    # changed, through os.environ, so the process's own environment (what programs it starts
    # get) changes with it.
    env = dict(request["env"])
    if config["preload"]:
        env.setdefault("MPLBACKEND", "Agg")
        env.setdefault("MPLCONFIGDIR", config["mplConfigDir"])
    inherited = prepared["env"]
    for key in inherited.keys() - env.keys():
        del os.environ[key]
    for key, value in env.items():
        if inherited.get(key) != value:
            os.environ[key] = value
    if config["preload"]:
        try:
            os.makedirs(os.environ["MPLCONFIGDIR"], mode=0o700, exist_ok=True)
        except OSError:
            pass
    # The random module reseeds itself after os.fork; numpy's global generator does not.
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:
        try:
            numpy_random.seed()
        except Exception:
            pass
    return report, in_w

_main()
`;
