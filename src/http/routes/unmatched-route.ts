/**
 * What an authenticated request that matched no contract route gets: 405 with `Allow`
 * when the path is a contract path and only the method is wrong, else 404. It runs after
 * authentication, so neither answer tells an anonymous caller anything.
 */
import type { Context } from "hono";
import { SandpoolError } from "../../contract/error-codes.js";
import { contractPaths } from "../name-contract-operations.js";

export function unmatchedRoute(basePath: string | undefined) {
  return (c: Context): never => {
    let path = c.req.path;
    if (basePath && (path === basePath || path.startsWith(`${basePath}/`)))
      path = path.slice(basePath.length);
    const allow = contractPaths.find(([pattern]) => pattern.test(path))?.[1];
    if (allow) {
      throw new SandpoolError("request.method_not_allowed", `${c.req.method} is not allowed here`, {
        headers: { Allow: allow },
      });
    }
    throw new SandpoolError("request.not_found", "no such route");
  };
}
