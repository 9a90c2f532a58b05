/**
 * The body of `POST /admin/v1/explain`: `{ workspace, operation, args, token?, egressHost? }`,
 * where `args` is the operation's own request (for sessions.create the CreateSession body; for
 * an operation on a session, its `session_id` and, for sessions.exec, the Execute body's fields;
 * for files.put an optional `content_length`). Every problem of a bad request is listed in one
 * 422; arguments that are an object but not what the operation takes are no problem here: they
 * are what explain reports (the `args` step), as the real call would refuse them. `token` is a
 * bearer token to check (its problems never quote it); `egressHost` a destination to explain
 * egress for.
 */
import { workspaceIdPattern } from "../auth/workspace-claim.js";
import { malformed } from "../contract/error-codes.js";
import type { OperationSpec } from "../operations/operation.js";
import { operations } from "../operations/registry.js";
import { hostPatternProblem } from "../policy-schema/egress-patterns.js";

/** A destination egress is explained for. */
export interface EgressDestinationInput {
  host: string;
  port: number;
}

export interface ExplainRequest {
  workspace: string;
  operation: OperationSpec;
  args: Record<string, unknown>;
  /** A bearer token whose call this is (src/explain/explain-token.ts). */
  token?: string;
  /** A destination to explain egress for (`egressHost`: `host` or `host:port`, port 443 by default). */
  egress?: EgressDestinationInput;
}

/** Longer than any credential the gateway accepts (the authenticator refuses it as malformed anyway). */
const MAX_TOKEN_LENGTH = 16_384;

/** The operations explain covers: the contract's, the ones workspace tokens call. */
export const explainable = (): OperationSpec[] => operations.all("contract");

/** Operations addressed by a session id, which the real call takes from its path. */
export const onSession = (operation: OperationSpec): boolean => operation.path.includes("{id}");

export function parseExplainRequest(body: unknown): ExplainRequest {
  if (body === null || typeof body !== "object" || Array.isArray(body))
    throw malformed(["the body must be an object: { workspace, operation, args }"]);
  const { workspace, operation: id, args, token, egressHost, ...rest } = body as Record<string, unknown>;
  const problems: string[] = [];
  for (const key of Object.keys(rest))
    problems.push(`${key}: unknown field (a request has workspace, operation, args, token and egressHost)`);
  if (token !== undefined && (typeof token !== "string" || token === "" || token.length > MAX_TOKEN_LENGTH))
    problems.push(`token: a bearer token, 1 to ${MAX_TOKEN_LENGTH} characters`);
  const egress = egressHost === undefined ? undefined : parseEgressHost(egressHost);
  if (typeof egress === "string") problems.push(egress);
  if (typeof workspace !== "string" || !workspaceIdPattern.test(workspace))
    problems.push(
      "workspace: must be a workspace id (letters, digits, . _ : -; 128 at most, starting with a letter or digit)",
    );
  const ids = explainable().map((operation) => operation.id);
  const operation = typeof id === "string" ? operations.get(id) : undefined;
  if (typeof id !== "string") problems.push(`operation: must be one of ${ids.join(", ")}`);
  else if (!operation) problems.push(`operation: unknown operation '${id}' (one of ${ids.join(", ")})`);
  else if (operation.group !== "contract")
    problems.push(`operation: explain covers the contract operations (${ids.join(", ")}), not '${id}'`);
  const argsObject = args === undefined ? {} : args;
  if (argsObject === null || typeof argsObject !== "object" || Array.isArray(argsObject))
    problems.push("args: must be an object (the operation's own request)");
  else if (operation && onSession(operation)) {
    const sessionId = (argsObject as Record<string, unknown>).session_id;
    if (typeof sessionId !== "string" || sessionId === "")
      problems.push(`args.session_id: ${operation.id} is called on a session: name it (a string)`);
  }
  const length = (argsObject as { content_length?: unknown } | null)?.content_length;
  if (
    operation?.id === "files.put" &&
    length !== undefined &&
    !(Number.isInteger(length) && (length as number) >= 0)
  )
    problems.push("args.content_length: the upload's Content-Length, a whole number of bytes");
  if (problems.length > 0) throw malformed(problems);
  return {
    workspace: workspace as string,
    operation: operation!,
    args: argsObject as Record<string, unknown>,
    ...(token === undefined ? {} : { token: (token as string).replace(/^Bearer\s+/i, "") }),
    ...(egress === undefined ? {} : { egress: egress as EgressDestinationInput }),
  };
}

/** `host` or `host:port` (a host name; an address is what the proxy checks by range): the destination, or the problem. */
function parseEgressHost(value: unknown): EgressDestinationInput | string {
  const usage = "egressHost: a host name, optionally with :port (api.example.com, api.example.com:8443)";
  if (typeof value !== "string") return usage;
  const match = /^([^:]+)(?::(\d{1,5}))?$/.exec(value);
  if (!match) return usage;
  const port = match[2] === undefined ? 443 : Number(match[2]);
  if (port < 1 || port > 65_535) return `egressHost: port ${match[2]} is not a valid port`;
  const problem = hostPatternProblem(match[1]!);
  if (problem || match[1]!.startsWith("*."))
    return `egressHost: ${problem ?? "a destination, not a pattern"}`;
  return { host: match[1]!, port };
}
