/**
 * The operator console (docs/console.md) at `/console`: static files only, served to anyone
 * who reaches the port, like the docs page: they hold no data. Everything the console shows,
 * it asks of the admin API (`/admin/v1`) with the admin token the operator signs in with; no
 * route here exists for it alone. `/console` and `/console/` are the page; `/console/<file>`
 * one of its files; anything else under it is 404, and a method other than GET or HEAD 405.
 */
import type { Hono } from "hono";
import type { ConsoleAssets } from "../../console/console-assets.js";
import { CONSOLE_HEADERS } from "../../console/console-headers.js";
import { SandpoolError } from "../../contract/error-codes.js";
import type { GatewayEnv } from "../gateway-env.js";

export const CONSOLE_PATH = "/console";

/** Serves the console's files on `app`, at /console. */
export function mountConsole(app: Hono<GatewayEnv>, assets: ConsoleAssets): void {
  const serve = (name: string): Response => {
    const asset = assets.get(name);
    if (!asset) {
      throw name === "index.html"
        ? new SandpoolError("request.not_found", "the console is not built here (npm run build builds it)")
        : new SandpoolError("request.not_found", "no such console file");
    }
    return new Response(asset.body as Uint8Array<ArrayBuffer>, {
      headers: { ...CONSOLE_HEADERS, "Content-Type": asset.contentType },
    });
  };
  app.get(CONSOLE_PATH, () => serve("index.html"));
  app.get(`${CONSOLE_PATH}/`, () => serve("index.html"));
  app.get(`${CONSOLE_PATH}/:file{[A-Za-z0-9][A-Za-z0-9._-]*}`, (c) => serve(c.req.param("file")));
  app.all(`${CONSOLE_PATH}/*`, (c) => refuse(c.req.method));
  app.all(CONSOLE_PATH, (c) => refuse(c.req.method));
}

function refuse(method: string): never {
  if (method !== "GET" && method !== "HEAD") {
    throw new SandpoolError("request.method_not_allowed", `${method} is not allowed here`, {
      headers: { Allow: "GET, HEAD" },
    });
  }
  throw new SandpoolError("request.not_found", "no such console file");
}
