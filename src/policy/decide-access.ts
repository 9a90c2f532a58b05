/**
 * Whether the workspace's policy lets a call through: the workspace enabled, the image and
 * the tool allowed, the file under the size cap. Pure: the policy in force and what the call
 * asks in, a verdict out (src/policy/verdict.ts).
 */
import type { ToolKind } from "../contract/schemas.js";
import type { EffectivePolicy } from "./effective-policy.js";
import { allow, deny, type PolicyVerdict } from "./verdict.js";

/** What the workspace may use instead, named in a refusal: the caller's own policy, nothing more. */
function allowedList(allowed: readonly string[]): string {
  return allowed.length === 0 ? "(it allows none)" : `(allowed: ${allowed.join(", ")})`;
}

/** A disabled workspace is refused everything that runs: new sessions and calls on open ones. */
export function workspaceEnabled(policy: EffectivePolicy): PolicyVerdict {
  return policy.enabled
    ? allow("workspace.enabled", "enabled", true)
    : deny("workspace.enabled", "enabled", false, {
        code: "policy.workspace_disabled",
        message: "the workspace is disabled",
      });
}

export interface ImageVerdict extends PolicyVerdict {
  /** The image the session would run: the one asked for, else the workspace's default. */
  image: string | undefined;
  /** True when none was asked for and the default was chosen. */
  defaulted: boolean;
}

/** The image asked for (or the default when none is) must be among the allowed images. */
export function imageAllowed(policy: EffectivePolicy, requested: string | null | undefined): ImageVerdict {
  const defaulted = requested == null;
  const image = requested ?? policy.defaultImage;
  const chosen = { image, defaulted };
  if (image === undefined) {
    // The row narrowed allowedImages so far that no image, so no default, is left.
    return {
      ...deny("image.allowed", "defaultImage", null, {
        code: "policy.image_not_allowed",
        message: "no image is allowed for this workspace (its policy leaves none)",
      }),
      ...chosen,
    };
  }
  if (!policy.allowedImages.includes(image)) {
    return {
      ...deny(
        "image.allowed",
        "allowedImages",
        policy.allowedImages,
        {
          code: "policy.image_not_allowed",
          message: `the image '${image}' is not allowed for this workspace ${allowedList(policy.allowedImages)}`,
        },
        image,
      ),
      ...chosen,
    };
  }
  return defaulted
    ? { ...allow("image.default", "defaultImage", image), ...chosen }
    : { ...allow("image.allowed", "allowedImages", policy.allowedImages, image), ...chosen };
}

export function toolAllowed(policy: EffectivePolicy, tool: ToolKind): PolicyVerdict {
  return policy.allowedTools.includes(tool)
    ? allow("tool.allowed", "allowedTools", policy.allowedTools, tool)
    : deny(
        "tool.allowed",
        "allowedTools",
        policy.allowedTools,
        {
          code: "policy.tool_not_allowed",
          message: `the tool '${tool}' is not allowed for this workspace ${allowedList(policy.allowedTools)}`,
        },
        tool,
      );
}

/** Room for multipart boundaries and part headers on top of an uploaded file itself. */
export const UPLOAD_FRAMING_BYTES = 64 * 1024;

/**
 * An upload whose declared size (its Content-Length, less `overheadBytes` of multipart
 * framing) exceeds the workspace's cap is refused before a byte is read; an undeclared
 * size is the sandbox's to enforce while it writes.
 */
export function fileSizeAllowed(
  policy: EffectivePolicy,
  declaredBytes: number | undefined,
  overheadBytes = UPLOAD_FRAMING_BYTES,
): PolicyVerdict {
  if (declaredBytes === undefined || !Number.isFinite(declaredBytes))
    return allow("file.size", "maxFileBytes", policy.maxFileBytes);
  return declaredBytes > policy.maxFileBytes + overheadBytes
    ? deny(
        "file.size",
        "maxFileBytes",
        policy.maxFileBytes,
        { code: "file.too_large", message: `the file is larger than the ${policy.maxFileBytes}-byte cap` },
        declaredBytes,
      )
    : allow("file.size", "maxFileBytes", policy.maxFileBytes, declaredBytes);
}
