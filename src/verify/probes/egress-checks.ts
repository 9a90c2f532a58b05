/**
 * Per-session egress, as a tenant can check it: a session that narrows its hosts
 * (CreateSession's `sandpool.egress.hosts`) is refused another host its workspace allows, and
 * its grant does not outlive it (the workspace's next session, on the same sandbox where reuse
 * puts it, is judged by its own narrowing). Every attempt is a CONNECT to the sandbox's egress
 * proxy, refused by NAME before anything is resolved; where the workspace allows any host the
 * names are under `.invalid` (RFC 6761: never resolvable), so no packet leaves for them either
 * way. A workspace without egress, or a sandbox without the proxy, has nothing to check: the
 * probe says so and passes (there is no egress to narrow).
 */
import type { CheckContext, CheckProbe, ProbeSession } from "../probe.js";
import { py, runJson } from "../probe.js";

/** CONNECTs to each host through the sandbox's proxy variable; answers the proxy's first line and reason. */
const VIA_PROXY = `
import os, socket, json
_proxy = os.environ.get('HTTPS_PROXY') or os.environ.get('https_proxy') or os.environ.get('HTTP_PROXY') or os.environ.get('http_proxy')
def via_proxy(host):
    if not _proxy:
        return 'no proxy'
    hp = _proxy.split('://', 1)[-1].rstrip('/')
    h, p = hp.rsplit(':', 1)
    try:
        s = socket.create_connection((h, int(p)), timeout=10)
    except Exception as e:
        return 'no proxy: %s' % e
    try:
        s.sendall(('CONNECT %s:443 HTTP/1.1\\r\\nHost: %s:443\\r\\n\\r\\n' % (host, host)).encode())
        s.settimeout(15)
        data = b''
        while len(data) < 4096:
            chunk = s.recv(1024)
            if not chunk:
                break
            data += chunk
            if data.startswith(b'HTTP/1.1 200'):
                break
        return ' '.join(data.decode('latin-1').split())[:300]
    except Exception as e:
        return 'error: %s' % e
    finally:
        s.close()
`;

const refusedByName = (answer: string) => /^HTTP\/1\.[01] 403/.test(answer) && /allowed hosts/.test(answer);
const noProxy = (answer: string) => answer.startsWith("no proxy");

interface Names {
  /** The narrowing of the first session; the second session's. */
  a: string;
  b: string;
  /** Both under .invalid: connecting to either sends nothing anywhere. */
  inert: boolean;
}

/** A session narrowed to `hosts`: its id, or the gateway's refusal (status and message). */
async function narrowedSession(
  context: CheckContext,
  hosts: string[],
): Promise<{ id: string } | { status: number; message: string }> {
  const answer = await context.one.raw("POST", "sessions", {
    body: JSON.stringify({ sandpool: { egress: { hosts } } }),
    headers: { "content-type": "application/json" },
  });
  if (answer.status === 201) return { id: (JSON.parse(answer.text) as { session_id: string }).session_id };
  let message = answer.text;
  try {
    message = (JSON.parse(answer.text) as { detail: { message: string } }).detail.message;
  } catch {}
  return { status: answer.status, message };
}

/** Two names within the workspace's hosts (from its refusal's list), or why there are none. */
function namesWithin(allowed: string[]): Names | string {
  const wildcard = allowed.find((pattern) => pattern.startsWith("*."));
  if (wildcard)
    return {
      a: `sandpool-verify-a${wildcard.slice(1)}`,
      b: `sandpool-verify-b${wildcard.slice(1)}`,
      inert: false,
    };
  const exact = allowed.filter((pattern) => !pattern.startsWith("*."));
  if (exact.length >= 2) return { a: exact[0]!, b: exact[1]!, inert: false };
  return `the workspace allows only ${allowed.join(", ")}: no second host to narrow away`;
}

async function connectFrom(context: CheckContext, sessionId: string, hosts: string[]) {
  const session: ProbeSession = { id: sessionId, client: context.one };
  return runJson<Record<string, string>>(
    session,
    `${VIA_PROXY}\nprint(json.dumps({h: via_proxy(h) for h in json.loads(${py(JSON.stringify(hosts))})}))`,
  );
}

export const egressChecks: CheckProbe[] = [
  {
    kind: "check",
    name: "egress.session-narrowing",
    claim:
      "a session narrowed to one host cannot reach another host its workspace allows, and its narrowing does not carry over to the workspace's next session",
    async run(context) {
      let names: Names = { a: "sandpool-verify-a.invalid", b: "sandpool-verify-b.invalid", inert: true };
      let first = await narrowedSession(context, [names.a]);
      if ("status" in first && first.status === 403 && /no egress to narrow/.test(first.message))
        return { pass: true, evidence: "not applicable: this workspace has no egress to narrow" };
      if ("status" in first && first.status === 403) {
        const listed = /\(([^()]*)\)\s*$/.exec(first.message)?.[1]?.split(", ") ?? [];
        const within = namesWithin(listed);
        if (typeof within === "string") return { pass: true, evidence: `not applicable: ${within}` };
        names = within;
        first = await narrowedSession(context, [names.a]);
      }
      if ("status" in first)
        return {
          pass: false,
          evidence: `a narrowed CreateSession answered ${first.status}: ${first.message}`,
        };
      let second: { id: string } | { status: number; message: string } | undefined;
      try {
        const seen = await connectFrom(context, first.id, [names.b]);
        if (noProxy(seen[names.b]!))
          return {
            pass: true,
            evidence: `not applicable: the session's sandbox has no egress proxy (${seen[names.b]})`,
          };
        if (!refusedByName(seen[names.b]!))
          return { pass: false, evidence: `narrowed to ${names.a}, ${names.b} answered: ${seen[names.b]}` };
        await context.one.deleteSession(first.id);
        // The next session narrows the other way: the first one's host is refused, its own not by name.
        second = await narrowedSession(context, [names.b]);
        if ("status" in second)
          return {
            pass: false,
            evidence: `the second narrowed CreateSession answered ${second.status}: ${second.message}`,
          };
        const targets = names.inert ? [names.a, names.b] : [names.a];
        const next = await connectFrom(context, second.id, targets);
        const ownRefused = names.inert && refusedByName(next[names.b]!);
        const pass = refusedByName(next[names.a]!) && !ownRefused;
        return {
          pass,
          evidence:
            `session 1 narrowed to ${names.a}: ${names.b} refused by name; session 2 narrowed to ${names.b}: ` +
            targets.map((host) => `${host} ${next[host]}`).join("; ") +
            (names.inert ? "" : ` (${names.b} not connected to: a real host of the workspace's)`),
        };
      } finally {
        await context.one.deleteSession(first.id).catch(() => undefined);
        if (second && "id" in second) await context.one.deleteSession(second.id).catch(() => undefined);
      }
    },
  },
];
