/**
 * Workspace API keys in the admin API (`/admin/v1/keys`). A key is shown once, when created;
 * listings never carry its secret nor its hash. Creation and revocation are audited
 * (api_key_audit) and announced to every replica, whose key cache drops the key at once.
 *
 *   POST   /keys                  201 CreatedKey   body { workspace, name?, expiresInSeconds? }
 *   GET    /keys[?workspace=W]    200 { items: KeyView[] }, oldest first
 *   DELETE /keys/:prefix          200 { revoked: KeyView }; 404 request.not_found (revoking twice is fine)
 * KeyView is { prefix, workspace, name, createdAt, createdBy, lastUsedAt, expiresAt, revokedAt }
 * (ISO 8601 dates or null; lastUsedAt lags by up to auth.apiKeyLastUsedFlushMs); CreatedKey adds `key`.
 */
import { type Context, Hono } from "hono";
import { z } from "zod";
import type { Caller } from "../../auth/principal.js";
import { workspaceIdPattern } from "../../auth/workspace-claim.js";
import { malformed, SandpoolError } from "../../contract/error-codes.js";
import { issueProblems } from "../../contract/schemas.js";
import { jsonBodyLimit, readJsonBody } from "../common/read-json-body.js";
import type { GatewayServices } from "../gateway-services.js";
import type { AdminEnv } from "./admin-routes.js";

const MAX_EXPIRY_SECONDS = 10 * 365 * 24 * 3600;

const createKeySchema = z.strictObject({
  workspace: z.string().regex(workspaceIdPattern, "not a valid workspace id"),
  name: z.string().min(1).max(200).nullish(),
  expiresInSeconds: z.number().int().min(60).max(MAX_EXPIRY_SECONDS).optional(),
});

export function adminKeysRoutes(services: GatewayServices): Hono<AdminEnv> {
  const routes = new Hono<AdminEnv>();
  const keys = () => {
    if (!services.apiKeyAdmin)
      throw new SandpoolError("request.not_found", "API keys are not available here");
    return services.apiKeyAdmin;
  };

  routes.post("/", jsonBodyLimit(services.limits.maxJsonBodyBytes), async (c) => {
    c.set("operation", "AdminCreateKey");
    const parsed = createKeySchema.safeParse(await readJsonBody(c));
    if (!parsed.success) throw malformed(issueProblems(parsed.error));
    const actor = actorOf(c.get("caller"));
    const created = await keys().create(parsed.data, actor);
    c.get("log").info({ workspace: created.workspace, prefix: created.prefix, actor }, "API key created");
    return c.json(created, 201);
  });

  routes.get("/", async (c) => {
    c.set("operation", "AdminListKeys");
    return c.json({ items: await keys().list(workspaceQuery(c)) });
  });

  routes.delete("/:prefix", async (c) => {
    c.set("operation", "AdminRevokeKey");
    const actor = actorOf(c.get("caller"));
    const revoked = await keys().revoke(c.req.param("prefix"), actor);
    c.get("log").info({ workspace: revoked.workspace, prefix: revoked.prefix, actor }, "API key revoked");
    return c.json({ revoked });
  });

  return routes;
}

/** Who the audit trail names: the admin token's subject, else "admin". */
function actorOf(caller: Caller): string {
  return caller.subject && caller.subject.length > 0 ? caller.subject : "admin";
}

function workspaceQuery(c: Context<AdminEnv>): string | undefined {
  const workspace = c.req.query("workspace");
  if (workspace === undefined || workspace === "") return undefined;
  if (!workspaceIdPattern.test(workspace))
    throw new SandpoolError("request.malformed", "workspace is not a valid workspace id");
  return workspace;
}
