/**
 * What a tenant can try against the gateway itself: another workspace's session id, a token
 * without a valid signature, a request too big to read, a path out of the workspace.
 */
import { Readable } from "node:stream";
import type { CheckProbe } from "../probe.js";

/** Part of a JWT: base64url of JSON. */
const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

/** A body larger than any JSON limit a deployment would set, sent as it is produced. */
const OVERSIZED_BYTES = 256 * 1024 * 1024;

export const gatewayChecks: CheckProbe[] = [
  {
    kind: "check",
    name: "tenancy.other-workspace-session",
    claim:
      "another workspace's session is a 404 indistinguishable from one that never existed, on every call",
    async run(context) {
      const session = await context.session();
      const made = "0123456789abcdef0123456789abcdef";
      const calls: [string, string, string?][] = [
        ["GET", "sessions/%s"],
        [
          "POST",
          "sessions/%s/exec",
          JSON.stringify({ tool: "bash_code_execution", input: { command: "ls" } }),
        ],
        ["GET", "sessions/%s/files/list?path=."],
        ["GET", "sessions/%s/files?path=x"],
        ["DELETE", "sessions/%s"],
      ];
      const odd: string[] = [];
      for (const [method, pattern, body] of calls) {
        const init = body === undefined ? {} : { body, headers: { "content-type": "application/json" } };
        const theirs = await context.other.raw(method, pattern.replace("%s", session.id), init);
        const unknown = await context.other.raw(method, pattern.replace("%s", made), init);
        // DELETE is idempotent (an unknown id is a 204 too): what matters is that it reads the same.
        const expected = method === "DELETE" ? unknown.status : 404;
        if (theirs.status !== expected || theirs.status !== unknown.status || theirs.text !== unknown.text)
          odd.push(
            `${method} ${pattern}: ${theirs.status} ${theirs.text.slice(0, 80)} (unknown id: ${unknown.status})`,
          );
      }
      const stillThere = await session.client.tool(session.id, "bash_code_execution", "echo alive");
      if (!stillThere.stdout.includes("alive")) odd.push("the other workspace's DELETE ended the session");
      return {
        pass: odd.length === 0,
        evidence:
          odd.length === 0
            ? `${calls.length} calls with the other workspace's token: the same answer as an unknown id, and the session lives on`
            : odd.join("; "),
      };
    },
  },
  {
    kind: "check",
    name: "auth.unsigned-token",
    claim: "a token with no signature (alg none) or a forged one is refused with 401",
    async run(context) {
      const [, payload, signature] = context.one.token.split(".");
      const claims = payload ? JSON.parse(Buffer.from(payload, "base64url").toString()) : {};
      const tries = {
        "alg none": `${part({ alg: "none", typ: "JWT" })}.${part(claims)}.`,
        "another signature": `${context.one.token.split(".").slice(0, 2).join(".")}.${Buffer.from(
          `${signature ?? ""}x`,
        ).toString("base64url")}`,
        "claims changed": `${context.one.token.split(".")[0]}.${part({ ...claims, workspace_id: "spv-forged" })}.${signature}`,
      };
      const answers: string[] = [];
      let pass = true;
      for (const [what, token] of Object.entries(tries)) {
        const answer = await context.http.send("POST", "sessions", {
          token,
          body: "{}",
          headers: { "content-type": "application/json" },
        });
        answers.push(`${what}: ${answer.status}`);
        if (answer.status !== 401) pass = false;
      }
      return { pass, evidence: answers.join("; ") };
    },
  },
  {
    kind: "check",
    name: "transport.oversized-request",
    claim: "a request body larger than the limit is refused (413) before it is read",
    async run(context) {
      let sent = 0;
      const body = Readable.from(
        (function* () {
          const chunk = Buffer.alloc(1024 * 1024, 0x20);
          while (sent < OVERSIZED_BYTES) {
            sent += chunk.length;
            yield chunk;
          }
        })(),
      );
      try {
        const answer = await context.http.send("POST", "sessions", {
          token: context.one.token,
          body: body as unknown as Buffer,
          headers: { "content-type": "application/json", "content-length": String(OVERSIZED_BYTES) },
        });
        return {
          pass: answer.status === 413,
          evidence: `${OVERSIZED_BYTES} bytes announced: ${answer.status} after ${Math.round(sent / 1024 / 1024)} MiB sent`,
        };
      } catch (error) {
        // The gateway may answer 413 and close before the client finished sending.
        return {
          pass: sent < OVERSIZED_BYTES,
          evidence: `the gateway closed the connection after ${Math.round(sent / 1024 / 1024)} MiB of ${OVERSIZED_BYTES / 1024 / 1024}: ${(error as Error).message}`,
        };
      } finally {
        body.destroy();
      }
    },
  },
  {
    kind: "check",
    name: "files.path-escape",
    claim: "file calls cannot name a path outside the session's workspace",
    async run(context) {
      const session = await context.session();
      const paths = ["../../../../etc/passwd", "/etc/passwd", "..%2f..%2fetc%2fpasswd", "workspace/../../.."];
      const leaked: string[] = [];
      const answers: string[] = [];
      for (const target of paths) {
        const answer = await session.client.raw(
          "GET",
          `sessions/${encodeURIComponent(session.id)}/files?path=${encodeURIComponent(target)}`,
        );
        answers.push(`${target}: ${answer.status}`);
        if (answer.status === 200 || answer.text.includes("root:x:0:0")) leaked.push(target);
      }
      return {
        pass: leaked.length === 0,
        evidence:
          leaked.length === 0 ? answers.join("; ") : `read outside the workspace: ${leaked.join(", ")}`,
      };
    },
  },
];
