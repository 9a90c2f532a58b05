/**
 * What code in a sandbox can reach: the sandbox server's own API (its Unix socket, any TCP
 * listener), a network interface or route, the gateway, the Docker API, the host. Every
 * attempt is a connect() from inside the sandbox; a sandbox without a network sends no
 * packet anywhere (there is no route), and the targets are the deployment's own addresses.
 */
import { HOST_GUARD } from "../host-guard.js";
import { LOOK_PRELUDE } from "../look-prelude.js";
import type { CheckProbe, ProbeSession } from "../probe.js";
import { py, runJson } from "../probe.js";

/** Connects to each target and says what answered; `http` sends GET /health first. */
const CONNECT = `
import socket
def attempt(family, address, http=True):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        s.connect(address)
        if not http:
            return 'connected'
        s.sendall(b'GET /health HTTP/1.0\\r\\nHost: sandbox\\r\\n\\r\\n')
        return 'answered ' + s.recv(64).decode('latin-1').split('\\r\\n')[0]
    except Exception as e:
        return 'refused: %s %s' % (type(e).__name__, e)
    finally:
        s.close()
`;

async function inside<T>(context: { session(): Promise<ProbeSession> }, code: string): Promise<T> {
  return runJson<T>(await context.session(), `${LOOK_PRELUDE}\n${CONNECT}\n${code}`);
}

/** The same, where the code must be in a sandbox: on a host it would knock on every local service. */
async function insideSandbox<T>(context: { session(): Promise<ProbeSession> }, code: string): Promise<T> {
  return inside<T>(context, `${HOST_GUARD}\n${code}`);
}

const listFailures = (results: Record<string, string>, failed: (answer: string) => boolean) =>
  Object.entries(results).filter(([, answer]) => failed(answer));

const describe = (results: Record<string, string>) =>
  Object.entries(results)
    .map(([target, answer]) => `${target} ${answer}`)
    .join("; ") || "nothing to try";

export const reachChecks: CheckProbe[] = [
  {
    kind: "check",
    name: "server.socket",
    claim: "code in a sandbox cannot call the sandbox server's API over its Unix socket",
    async run(context) {
      // Where the sandbox server listens (its socket directory), and any socket bound under it.
      const results = await insideSandbox<Record<string, string>>(
        context,
        `
import glob
paths = set(glob.glob('/run/sandpool/*'))
for line in _read('/proc/net/unix', True).splitlines()[1:]:
    parts = line.split()
    if len(parts) >= 8 and parts[7].startswith('/run/sandpool/'):
        paths.add(parts[7])
print(json.dumps({p: attempt(socket.AF_UNIX, p) for p in sorted(paths)}))
`,
      );
      // The egress forwarder's socket is the code's way out, and answers no API of the server.
      const failed = listFailures(results, (answer) => answer.startsWith("answered HTTP/1.1 200"));
      return { pass: failed.length === 0, evidence: describe(results) };
    },
  },
  {
    kind: "check",
    name: "server.tcp",
    claim: "no TCP listener inside the sandbox serves the sandbox server's API",
    async run(context) {
      const results = await insideSandbox<Record<string, string>>(
        context,
        `
found = {}
for table, family, host in (('tcp', socket.AF_INET, '127.0.0.1'), ('tcp6', socket.AF_INET6, '::1')):
    for line in _read('/proc/net/' + table, True).splitlines()[1:]:
        parts = line.split()
        if len(parts) > 3 and parts[3] == '0A':
            port = int(parts[1].rsplit(':', 1)[1], 16)
            found['%s:%d' % (host, port)] = attempt(family, (host, port))
print(json.dumps(found))
`,
      );
      const failed = listFailures(results, (answer) => answer.startsWith("answered HTTP/1.1 200"));
      return { pass: failed.length === 0, evidence: describe(results) || "no TCP listener" };
    },
  },
  {
    kind: "check",
    name: "network.interfaces",
    claim: "a sandbox has no network interface but loopback, and no route",
    async run(context) {
      const seen = await inside<{ interfaces: string[]; routes: string[] }>(
        context,
        `
routes = [l.split()[0] + ' ' + l.split()[1] for l in _read('/proc/net/route', True).splitlines()[1:] if l.strip()]
routes += [l.split()[-1] + ' ' + l.split()[0] for l in _read('/proc/net/ipv6_route', True).splitlines() if l.strip() and l.split()[-1] != 'lo']
print(json.dumps({'interfaces': sorted(os.listdir('/sys/class/net')) if os.path.isdir('/sys/class/net') else [], 'routes': routes}))
`,
      );
      const extra = seen.interfaces.filter((name) => name !== "lo");
      return {
        pass: extra.length === 0 && seen.routes.length === 0,
        evidence: `interfaces: ${seen.interfaces.join(", ") || "none"}; routes: ${seen.routes.join(", ") || "none"}`,
      };
    },
  },
  {
    kind: "check",
    name: "network.gateway-and-host",
    claim:
      "code in a sandbox cannot open a connection to the gateway, Redis, Postgres or the Docker API at the deployment's addresses",
    async run(context) {
      const targets = reachTargets(context.http.baseUrl);
      const results = await inside<Record<string, string>>(
        context,
        `
targets = json.loads(${py(JSON.stringify(targets))})
routes = [l.split() for l in _read('/proc/net/route', True).splitlines()[1:] if l.strip()]
for r in routes:
    if r[1] == '00000000' and r[2] != '00000000':
        gw = socket.inet_ntoa(bytes.fromhex(r[2])[::-1])
        targets += [[gw, p] for p in (${REACH_PORTS.join(", ")})]
out = {}
for host, port in targets:
    family = socket.AF_INET6 if ':' in host else socket.AF_INET
    out['%s:%d' % (host, port)] = attempt(family, (host, port), http=False)
print(json.dumps(out))
`,
      );
      const failed = listFailures(results, (answer) => answer === "connected");
      return { pass: failed.length === 0, evidence: describe(results) };
    },
  },
  {
    kind: "check",
    name: "network.docker-socket",
    claim: "no container engine's socket is reachable from a sandbox",
    async run(context) {
      const results = await inside<Record<string, string>>(
        context,
        `
import glob
paths = set()
for pattern in ('/var/run/*.sock', '/run/*.sock', '/run/*/*.sock', '/var/run/*/*.sock', '/*.sock', '/tmp/*.sock'):
    paths.update(glob.glob(pattern))
print(json.dumps({p: attempt(socket.AF_UNIX, p, http=False) for p in sorted(paths) if 'sandpool' not in p}))
`,
      );
      const failed = listFailures(results, (answer) => answer === "connected");
      return { pass: failed.length === 0, evidence: describe(results) || "no engine socket in the sandbox" };
    },
  },
];

/** The gateway's, Redis', Postgres' and Docker's usual ports, tried at every address found. */
const REACH_PORTS = [80, 443, 2375, 2376, 5432, 6379, 8080];

/**
 * The gateway's own address and port when the URL names an IP (a name may not resolve inside
 * the sandbox, and a loopback address there is the sandbox's own), with the usual ports.
 */
function reachTargets(baseUrl: string): [string, number][] {
  const url = new URL(baseUrl);
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const port = Number(url.port || (url.protocol === "https:" ? 443 : 80));
  const isIp = /^[\d.]+$/.test(host) || host.includes(":");
  if (!isIp) return [];
  return [[host, port], ...REACH_PORTS.filter((p) => p !== port).map((p): [string, number] => [host, p])];
}
