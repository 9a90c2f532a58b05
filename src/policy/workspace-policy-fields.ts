/**
 * The editable fields of a workspace's policy row, as operators write them. Null or
 * absent means "no narrowing". Writing a value above the deployment's ceiling is refused
 * (422) rather than silently clamped, so an operator never believes a limit is in force
 * that is not.
 */
import { z } from "zod";
import { SandpoolError } from "../contract/error-codes.js";
import { describeIssues, toolKinds } from "../contract/schemas.js";
import type { DeploymentPolicy } from "./deployment-policy.js";

const limit = z.number().int().min(1).nullish();

export const workspacePolicyFieldsSchema = z.strictObject({
  enabled: z.boolean().optional(),
  allowedImages: z.array(z.string().min(1)).nullish(),
  defaultImage: z.string().min(1).nullish(),
  allowedTools: z.array(z.enum(toolKinds)).nullish(),
  execTimeoutCeilingSeconds: limit,
  idleTimeoutCeilingSeconds: limit,
  maxLifetimeCeilingSeconds: limit,
  maxConcurrentSessions: limit,
  sessionsPerMinute: limit,
  execSecondsPerDay: limit,
  maxFileBytes: limit,
  resourceClass: z.string().min(1).nullish(),
  egressAllowed: z.boolean().nullish(),
});

export type WorkspacePolicyFields = z.output<typeof workspacePolicyFieldsSchema>;

/** Numeric fields that share their name with a deployment ceiling: a row may only lower them. */
export const ceilingFields = [
  "execTimeoutCeilingSeconds",
  "idleTimeoutCeilingSeconds",
  "maxLifetimeCeilingSeconds",
  "maxConcurrentSessions",
  "sessionsPerMinute",
  "execSecondsPerDay",
  "maxFileBytes",
] as const satisfies readonly (keyof WorkspacePolicyFields & keyof DeploymentPolicy)[];

/**
 * Parses an edit and checks it against the deployment: every problem is listed in one
 * 422 so an operator fixes them all at once.
 */
export function validatePolicyEdit(
  input: unknown,
  deployment: DeploymentPolicy,
  resourceClasses: readonly string[],
): WorkspacePolicyFields {
  const parsed = workspacePolicyFieldsSchema.safeParse(input);
  if (!parsed.success) throw new SandpoolError("request.malformed", describeIssues(parsed.error));
  const fields = parsed.data;
  const problems: string[] = [];
  for (const field of ceilingFields) {
    const value = fields[field];
    if (typeof value === "number" && value > deployment[field]) {
      problems.push(`${field}: ${value} is above the deployment ceiling of ${deployment[field]}`);
    }
  }
  for (const image of fields.allowedImages ?? []) {
    if (!deployment.allowedImages.includes(image))
      problems.push(`allowedImages: '${image}' is not allowed by the deployment`);
  }
  for (const tool of fields.allowedTools ?? []) {
    if (!deployment.allowedTools.includes(tool))
      problems.push(`allowedTools: '${tool}' is not allowed by the deployment`);
  }
  if (fields.defaultImage != null) {
    const images = fields.allowedImages ?? deployment.allowedImages;
    if (!images.includes(fields.defaultImage))
      problems.push(`defaultImage: '${fields.defaultImage}' is not an allowed image`);
  }
  if (fields.resourceClass != null && !resourceClasses.includes(fields.resourceClass)) {
    problems.push(
      `resourceClass: '${fields.resourceClass}' has no pool (known: ${resourceClasses.join(", ")})`,
    );
  }
  if (fields.egressAllowed === true && !deployment.egressAllowed) {
    problems.push("egressAllowed: the deployment does not allow egress");
  }
  if (problems.length > 0) throw new SandpoolError("request.malformed", problems.join("; "));
  return fields;
}
