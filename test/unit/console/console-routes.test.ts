/**
 * /console (src/http/routes/console-routes.ts, src/console/): the page and its files with the
 * strict Content-Security-Policy and no caching surprises, nothing outside the built folder
 * (a name is looked up, never joined to a path), 404 for unknown files and when the console
 * is not built, 405 for a method other than GET or HEAD.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Hono } from "hono";
import { pino } from "pino";
import { afterAll, describe, expect, it } from "vitest";
import { consoleAssetsIn } from "../../../src/console/console-assets.js";
import { CONSOLE_CONTENT_SECURITY_POLICY } from "../../../src/console/console-headers.js";
import { consoleSettingsSchema } from "../../../src/console/console-settings.js";
import { errorResponse } from "../../../src/http/common/error-response.js";
import type { GatewayEnv } from "../../../src/http/gateway-env.js";
import { mountConsole } from "../../../src/http/routes/console-routes.js";

const log = pino({ level: "silent" });
const dir = mkdtempSync(path.join(tmpdir(), "sandpool-console-"));
const built = path.join(dir, "console-assets");
mkdirSync(built);
writeFileSync(path.join(built, "index.html"), "<!doctype html><title>console</title>");
writeFileSync(path.join(built, "app.js"), "export {};");
writeFileSync(path.join(built, "notes.txt"), "not served: no known type");
writeFileSync(path.join(dir, "secret.js"), "outside the folder");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function appServing(folder: string): Hono<GatewayEnv> {
  const app = new Hono<GatewayEnv>();
  mountConsole(app, consoleAssetsIn(folder));
  app.onError((error, c) => errorResponse(c, error, log));
  return app;
}

describe("/console", () => {
  const app = appServing(built);

  it("serves the page at /console and /console/ with the Content-Security-Policy", async () => {
    for (const target of ["/console", "/console/"]) {
      const answer = await app.request(target);
      expect(answer.status, target).toBe(200);
      expect(answer.headers.get("content-type")).toBe("text/html; charset=utf-8");
      expect(answer.headers.get("content-security-policy")).toBe(CONSOLE_CONTENT_SECURITY_POLICY);
      expect(answer.headers.get("x-content-type-options")).toBe("nosniff");
      expect(answer.headers.get("x-frame-options")).toBe("DENY");
      expect(await answer.text()).toContain("<title>console</title>");
    }
    expect(CONSOLE_CONTENT_SECURITY_POLICY).toMatch(/default-src 'self'/);
    expect(CONSOLE_CONTENT_SECURITY_POLICY).not.toMatch(/unsafe-inline|unsafe-eval|https?:|\*/);
  });

  it("serves a file of the build with its type, and nothing else", async () => {
    const script = await app.request("/console/app.js");
    expect(script.status).toBe(200);
    expect(script.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    for (const target of [
      "/console/notes.txt",
      "/console/missing.js",
      "/console/..%2Fsecret.js",
      "/console/a/b.js",
    ]) {
      const answer = await app.request(target);
      expect(answer.status, target).toBe(404);
      expect(await answer.json()).toMatchObject({ detail: { code: "request.not_found" } });
    }
  });

  it("answers 405 with Allow to a method other than GET or HEAD", async () => {
    for (const target of ["/console", "/console/", "/console/app.js"]) {
      const answer = await app.request(target, { method: "POST" });
      expect(answer.status, target).toBe(405);
      expect(answer.headers.get("allow")).toBe("GET, HEAD");
    }
  });

  it("says the console is not built where there is no build", async () => {
    const answer = await appServing(path.join(dir, "absent")).request("/console/");
    expect(answer.status).toBe(404);
    expect(((await answer.json()) as { detail: { message: string } }).detail.message).toMatch(
      /npm run build/,
    );
  });

  it("is on unless the setting turns it off", () => {
    expect(consoleSettingsSchema.parse(undefined)).toEqual({ enabled: true });
    expect(consoleSettingsSchema.parse({ enabled: false })).toEqual({ enabled: false });
    expect(() => consoleSettingsSchema.parse({ enable: false })).toThrow();
  });
});
