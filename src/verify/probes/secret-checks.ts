/**
 * A workspace secret never reaches the sandbox: with a secret stored for the workspace (a
 * random value the run makes, bound to a host under `.invalid` or one the workspace allows),
 * a session of that workspace searches what its code can read (every process's environment
 * and command line, and the files of every place a program might look: /etc, /tmp, /run, the
 * home and sessions' directories, and every mount the container was given) and must find
 * no trace of the value. The secret is removed at the end. Needs the admin API (only an
 * operator stores secrets); a deployment with no key ring has no secret to leak and passes,
 * saying so.
 */
import { randomBytes } from "node:crypto";
import type { CheckContext, CheckProbe } from "../probe.js";
import { py, runJson } from "../probe.js";
import type { AdminView } from "../verify-client.js";

/** What the session's code searches, bounded so a large image cannot stall the run. */
export const secretSearchProgram = (value: string) => `
import json, os
# Sent reversed: the value itself is never in the code, nor wherever the code is kept.
needle = ${py([...value].reverse().join(""))}[::-1].encode()
found = []
def look(label, blob):
    if needle in blob:
        found.append(label)
for pid in os.listdir('/proc'):
    if pid.isdigit():
        for part in ('environ', 'cmdline'):
            try:
                look('/proc/%s/%s' % (pid, part), open('/proc/%s/%s' % (pid, part), 'rb').read())
            except OSError:
                pass
look('os.environ', json.dumps(dict(os.environ)).encode())
# Where code writes and programs read first, then every mount the container was given.
roots = ['/tmp', '/dev/shm', '/var/tmp', '/run', os.path.dirname(os.path.dirname(os.getcwd())),
         os.path.expanduser('~'), '/etc']
for line in open('/proc/self/mountinfo'):
    point = line.split()[4]
    if point not in roots and point != '/' and not point.startswith(('/proc', '/sys', '/dev')):
        roots.append(point)
def search_files():
    files, budget = 0, 64 << 20
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            for name in filenames:
                path = os.path.join(dirpath, name)
                try:
                    if not os.path.isfile(path) or os.path.getsize(path) > 1 << 20:
                        continue
                    blob = open(path, 'rb').read()
                except OSError:
                    continue
                files, budget = files + 1, budget - len(blob)
                look(path, blob)
                if files >= 20000 or budget <= 0:
                    return files
    return files
files = search_files()
print(json.dumps({'found': found, 'files': files}))
`;

const HOST_WHEN_ANY = "sandpool-verify.invalid";

/** A host the workspace's egressAllowHosts admits (a refused binding lists them), or none. */
function hostWithin(refusal: string): string | undefined {
  const listed = /egressAllowHosts \(([^()]*)\)/.exec(refusal)?.[1]?.split(", ") ?? [];
  const wildcard = listed.find((pattern) => pattern.startsWith("*."));
  if (wildcard) return `sandpool-verify${wildcard.slice(1)}`;
  return listed.find((pattern) => pattern.length > 0 && !pattern.startsWith("*."));
}

async function storeSecret(
  admin: AdminView,
  workspace: string,
  name: string,
  value: string,
): Promise<{ stored: true } | { stored: false; status: number; text: string }> {
  const binding = (host: string) => ({
    value,
    hosts: [host],
    header: "X-Sandpool-Verify",
    template: "{{secret}}",
  });
  let answer = await admin.putSecret(workspace, name, binding(HOST_WHEN_ANY));
  if (answer.status === 422) {
    const host = hostWithin(answer.text);
    if (host) answer = await admin.putSecret(workspace, name, binding(host));
  }
  return answer.status === 200 || answer.status === 201 ? { stored: true } : { stored: false, ...answer };
}

export const secretChecks: CheckProbe[] = [
  {
    kind: "check",
    name: "egress.secret-unseen",
    claim:
      "a workspace secret's value is nowhere a session's code can read: no process environment or command line, no file",
    async run(context: CheckContext) {
      const admin = context.admin;
      if (!admin) return { pass: false, evidence: "needs the admin API (--admin-token)" };
      const placing = await context.session();
      const placed = await admin.sessionOf(placing.id);
      if (!placed) return { pass: false, evidence: "the admin API does not list the session just created" };
      const name = `${context.tag}-secret`;
      const value = `spv-value-${randomBytes(16).toString("hex")}`;
      const stored = await storeSecret(admin, placed.workspace, name, value);
      if (!stored.stored && stored.status === 503 && stored.text.includes("secrets.not_configured"))
        return { pass: true, evidence: "not applicable: this deployment has no secrets key ring" };
      if (!stored.stored)
        return {
          pass: false,
          evidence: `storing a secret answered ${stored.status}: ${stored.text.slice(0, 300)}`,
        };
      try {
        // A session begun after the secret was stored: its grant carries it, if any does.
        const session = await context.session();
        const seen = await runJson<{ found: string[]; files: number }>(
          session,
          secretSearchProgram(value),
          120,
        );
        return {
          pass: seen.found.length === 0,
          evidence:
            seen.found.length === 0
              ? `searched every process's environment and ${seen.files} files: no trace of the value`
              : `the value was found in ${seen.found.slice(0, 10).join(", ")}`,
        };
      } finally {
        await admin.removeSecret(placed.workspace, name).catch(() => undefined);
      }
    },
  },
];
