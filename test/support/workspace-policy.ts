/** A workspace's policy edited through the admin API of a test deployment, as an operator would. */
import { mintToken } from "../../src/auth/dev-keys.js";
import { SERVE_AUDIENCE, SERVE_SECRET } from "./serve-deployment.js";

/** PUT /admin/v1/workspaces/{ws}/policy with a fresh admin token of the serve test deployments. */
export async function putWorkspacePolicy(
  url: string,
  workspace: string,
  edit: Record<string, unknown>,
): Promise<Response> {
  const admin = await mintToken({
    secret: SERVE_SECRET,
    audience: SERVE_AUDIENCE,
    workspace: "ops",
    admin: true,
  });
  return fetch(`${url}/admin/v1/workspaces/${workspace}/policy`, {
    method: "PUT",
    headers: { authorization: `Bearer ${admin}`, "content-type": "application/json" },
    body: JSON.stringify(edit),
  });
}
