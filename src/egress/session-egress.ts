/**
 * A session's own narrowing of its workspace's egress, asked at CreateSession:
 *
 *   {"sandpool": {"egress": {"hosts": ["api.example.com"]}, "secrets": ["github"]}}
 *
 * `hosts` narrows what the session's sandbox may reach; `secrets` which of the workspace's
 * secrets the egress proxy may present for it. A session may only narrow, never widen: a
 * host beyond the workspace's `egressAllowHosts`, a secret the workspace does not hold, or
 * any narrowing on a workspace without egress is refused (403, naming the field), as a bad
 * shape is (422). Pure: the body, the policy in force and the workspace's secret names in,
 * the lease's narrowing or a refusal out; CreateSession enforces it, explain reports it.
 *
 * The `sandpool` member is ours, beside the contract's fields (CreateSession allows extra
 * properties), so the contract's own schema (src/contract/schemas.ts) stays untouched.
 */
import { z } from "zod";
import { malformed, SandpoolError } from "../contract/error-codes.js";
import type { EffectivePolicy } from "../policy/effective-policy.js";
import { hostPatternProblem, hostPatternWithin } from "../policy-schema/egress-patterns.js";
import type { LeaseEgress } from "../store/coordination/records.js";

/** Bounds: a narrowing is a short list; a longer one is a mistake or an attack on the lease's size. */
const MAX_HOSTS = 64;
const MAX_SECRETS = 64;
const MAX_NAME = 200;

const hostPattern = z.string().superRefine((pattern, ctx) => {
  const problem = hostPatternProblem(pattern);
  if (problem) ctx.addIssue({ code: "custom", message: problem });
});

const sandpoolExtension = z.strictObject({
  egress: z.optional(z.strictObject({ hosts: z.array(hostPattern).min(1).max(MAX_HOSTS) })),
  secrets: z.optional(z.array(z.string().min(1).max(MAX_NAME)).max(MAX_SECRETS)),
});

export type SandpoolExtension = z.infer<typeof sandpoolExtension>;

/** What egress reads of the policy to judge a narrowing. */
export type NarrowingPolicy = Pick<EffectivePolicy, "egressAllowed" | "egressAllowHosts">;

export type NarrowingVerdict =
  | { allowed: true; egress: LeaseEgress | undefined }
  | {
      allowed: false;
      field: string;
      code: "policy.egress_not_allowed" | "policy.secret_not_allowed";
      message: string;
    };

/**
 * The `sandpool` member of a CreateSession body, checked for shape; undefined when absent.
 * Throws 422 `request.malformed` naming each problem's path (`sandpool.egress.hosts[1]: ...`).
 */
export function parseSessionEgress(body: unknown): SandpoolExtension | undefined {
  const raw = (body as { sandpool?: unknown } | null | undefined)?.sandpool;
  if (raw === undefined || raw === null) return undefined;
  const parsed = sandpoolExtension.safeParse(raw);
  if (parsed.success) return parsed.data;
  throw malformed(parsed.error.issues.map((issue) => `${fieldPath(issue.path)}: ${issue.message}`));
}

function fieldPath(path: readonly PropertyKey[]): string {
  return path.reduce<string>(
    (text, part) => (typeof part === "number" ? `${text}[${part}]` : `${text}.${String(part)}`),
    "sandpool",
  );
}

/**
 * Whether the narrowing stays within the workspace: every host within its allowed hosts
 * (any valid pattern narrows a workspace that allows any host), every secret one it holds.
 * The first offending field is named, as the rest of the gateway's refusals name one thing.
 */
export function judgeNarrowing(
  asked: SandpoolExtension | undefined,
  policy: NarrowingPolicy,
  secretNames: readonly string[],
): NarrowingVerdict {
  if (asked === undefined || (asked.egress === undefined && asked.secrets === undefined))
    return { allowed: true, egress: undefined };
  if (!policy.egressAllowed) {
    const field = asked.egress ? "sandpool.egress" : "sandpool.secrets";
    return {
      allowed: false,
      field,
      code: "policy.egress_not_allowed",
      message: `${field}: this workspace has no egress to narrow`,
    };
  }
  const hosts = asked.egress?.hosts;
  const ceiling = policy.egressAllowHosts;
  for (const [index, host] of (hosts ?? []).entries()) {
    if (ceiling.length > 0 && !hostPatternWithin(host, ceiling)) {
      const field = `sandpool.egress.hosts[${index}]`;
      return {
        allowed: false,
        field,
        code: "policy.egress_not_allowed",
        message: `${field}: '${host}' is not within this workspace's allowed hosts (${ceiling.join(", ")})`,
      };
    }
  }
  const known = new Set(secretNames);
  for (const [index, name] of (asked.secrets ?? []).entries()) {
    if (!known.has(name)) {
      const field = `sandpool.secrets[${index}]`;
      // Says nothing of which names do exist: the caller's own workspace, but a refusal
      // need not be a listing.
      return {
        allowed: false,
        field,
        code: "policy.secret_not_allowed",
        message: `${field}: this workspace holds no secret '${name}'`,
      };
    }
  }
  return {
    allowed: true,
    egress: {
      ...(hosts ? { hosts: [...new Set(hosts.map((host) => host.toLowerCase()))] } : {}),
      ...(asked.secrets ? { secrets: [...new Set(asked.secrets)] } : {}),
    },
  };
}

/** The refusal a verdict answers with. */
export function narrowingRefusal(verdict: Extract<NarrowingVerdict, { allowed: false }>): SandpoolError {
  return new SandpoolError(verdict.code, verdict.message);
}

/**
 * A lease's narrowing as it reads back from the store. Redis's Lua cjson may write an empty
 * list as `{}`, so a present member that is not a list is read as the empty list: for
 * `secrets` "none", for `hosts` "no host" (never "any host": that would widen).
 */
export function leaseEgressOf(lease: { egress?: unknown }): LeaseEgress | undefined {
  const egress = lease.egress as { hosts?: unknown; secrets?: unknown } | undefined;
  if (egress === undefined || egress === null || typeof egress !== "object") return undefined;
  const list = (value: unknown): string[] =>
    Array.isArray(value) ? value.filter((item): item is string => typeof item === "string") : [];
  return {
    ...(egress.hosts === undefined ? {} : { hosts: list(egress.hosts) }),
    ...(egress.secrets === undefined ? {} : { secrets: list(egress.secrets) }),
  };
}
