/**
 * Opaque tokens checked at a real RFC 7662 endpoint this test serves on 127.0.0.1: active
 * with a workspace authenticates, inactive (or no workspace) is 401, slow or down is 503
 * `auth.introspection_unavailable`; answers are cached (never past exp), refusals briefly;
 * the request is form-encoded with HTTP Basic client credentials; an active token meant for
 * another audience or client (the answer's `aud`, `client_id`) is 401 like an inactive one.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { IntrospectionAuthenticator } from "../../../src/auth/introspection-authenticator.js";
import { introspectionConfigSchema } from "../../../src/auth/introspection-config.js";

interface Seen {
  authorization: string | undefined;
  contentType: string | undefined;
  body: string;
}

let server: Server;
let url: string;
const seen: Seen[] = [];
let respond: (token: string, res: ServerResponse) => void = () => {};

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = "";
    req.on("data", (chunk) => {
      body += chunk;
    });
    req.on("end", () => {
      seen.push({ authorization: req.headers.authorization, contentType: req.headers["content-type"], body });
      respond(new URLSearchParams(body).get("token") ?? "", res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/introspect`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});
afterEach(() => {
  seen.length = 0;
});

function json(res: ServerResponse, body: unknown, status = 200): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

function authenticator(extra: Record<string, unknown> = {}, now?: () => number) {
  const config = introspectionConfigSchema.parse({
    url,
    clientId: "gate way",
    clientSecret: "s3:cret",
    ...extra,
  });
  return new IntrospectionAuthenticator(config, { now });
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

describe("introspection", () => {
  it("authenticates an active token with a workspace, posting it form-encoded with Basic credentials", async () => {
    respond = (token, res) =>
      json(res, {
        active: token === "good-token",
        workspace_id: "team-a",
        sub: "user-1",
        exp: nowSeconds() + 600,
      });
    const caller = await authenticator().authenticate("good-token");
    expect(caller).toMatchObject({ workspace: "team-a", subject: "user-1" });
    expect(caller.admin).toBeUndefined();
    expect(seen).toHaveLength(1);
    expect(seen[0]!.contentType).toBe("application/x-www-form-urlencoded");
    expect(new URLSearchParams(seen[0]!.body).get("token")).toBe("good-token");
    // RFC 6749 2.3.1: form-encoded, then Basic.
    expect(seen[0]!.authorization).toBe(`Basic ${Buffer.from("gate+way:s3%3Acret").toString("base64")}`);
  });

  it("reads the workspace from the configured field, a dotted path too", async () => {
    respond = (_token, res) => json(res, { active: true, ext: { tenant: "team-b" } });
    await expect(authenticator({ workspaceField: "ext.tenant" }).authenticate("t")).resolves.toMatchObject({
      workspace: "team-b",
    });
  });

  it("refuses inactive tokens, tokens without a valid workspace, and expired ones with 401", async () => {
    const answers: Record<string, unknown> = {
      inactive: { active: false, workspace_id: "team-a" },
      "active-string": { active: "true", workspace_id: "team-a" },
      "no-workspace": { active: true },
      "bad-workspace": { active: true, workspace_id: "../etc" },
      expired: { active: true, workspace_id: "team-a", exp: nowSeconds() - 5 },
    };
    respond = (token, res) => json(res, answers[token]);
    const auth = authenticator();
    for (const token of Object.keys(answers)) {
      await expect(auth.authenticate(token), token).rejects.toMatchObject({
        code: "auth.invalid",
        status: 401,
      });
    }
  });

  it("with an audience, refuses an active token whose aud does not name it (the server's other clients)", async () => {
    const answers: Record<string, unknown> = {
      "for-sandpool": { active: true, workspace_id: "team-a", aud: "sandpool" },
      "for-both": { active: true, workspace_id: "team-a", aud: ["billing", "sandpool"] },
      "for-billing": { active: true, workspace_id: "team-a", aud: "billing" },
      "for-many-others": { active: true, workspace_id: "team-a", aud: ["billing", "sandpool-staging"] },
      "no-aud": { active: true, workspace_id: "team-a" },
      "aud-not-a-string": { active: true, workspace_id: "team-a", aud: { sandpool: true } },
    };
    respond = (token, res) => json(res, answers[token]);
    const auth = authenticator({ audience: "sandpool" });
    await expect(auth.authenticate("for-sandpool")).resolves.toMatchObject({ workspace: "team-a" });
    await expect(auth.authenticate("for-both")).resolves.toMatchObject({ workspace: "team-a" });
    for (const token of ["for-billing", "for-many-others", "no-aud", "aud-not-a-string"]) {
      await expect(auth.authenticate(token), token).rejects.toMatchObject({
        code: "auth.invalid",
        status: 401,
        reason: "introspection_refused",
      });
    }
  });

  it("with allowed client ids, refuses an active token issued to another client", async () => {
    const answers: Record<string, unknown> = {
      ours: { active: true, workspace_id: "team-a", client_id: "agent-runner" },
      theirs: { active: true, workspace_id: "team-a", client_id: "billing-ui" },
      "no-client": { active: true, workspace_id: "team-a" },
      "client-list": { active: true, workspace_id: "team-a", client_id: ["agent-runner"] },
    };
    respond = (token, res) => json(res, answers[token]);
    const auth = authenticator({ allowedClientIds: ["agent-runner", "notebooks"] });
    await expect(auth.authenticate("ours")).resolves.toMatchObject({ workspace: "team-a" });
    for (const token of ["theirs", "no-client", "client-list"]) {
      await expect(auth.authenticate(token), token).rejects.toMatchObject({ code: "auth.invalid" });
    }
    // Both set: both must hold.
    answers.both = { active: true, workspace_id: "team-a", client_id: "notebooks", aud: "sandpool" };
    answers["right-client-wrong-aud"] = { ...(answers.both as object), aud: "billing" };
    const strict = authenticator({ audience: "sandpool", allowedClientIds: ["notebooks"] });
    await expect(strict.authenticate("both")).resolves.toMatchObject({ workspace: "team-a" });
    await expect(strict.authenticate("right-client-wrong-aud")).rejects.toMatchObject({
      code: "auth.invalid",
    });
  });

  it("refuses anyAudience beside an audience or client ids: the waiver and the check contradict", () => {
    for (const extra of [{ audience: "sandpool" }, { allowedClientIds: ["agent-runner"] }]) {
      const parsed = introspectionConfigSchema.safeParse({
        url,
        clientId: "c",
        clientSecret: "s",
        anyAudience: true,
        ...extra,
      });
      expect(parsed.success).toBe(false);
      expect(parsed.error?.issues[0]?.path).toEqual(["anyAudience"]);
    }
    const waived = introspectionConfigSchema.parse({
      url,
      clientId: "c",
      clientSecret: "s",
      anyAudience: true,
    });
    expect(waived.anyAudience).toBe(true);
  });

  it("caches an active answer but never past exp, and a refusal only briefly", async () => {
    let clock = Date.now();
    const exp = Math.floor(clock / 1000) + 10;
    respond = (token, res) => json(res, { active: token === "good", workspace_id: "team-a", exp });
    const auth = authenticator({ cacheSeconds: 60, refusalCacheSeconds: 5 }, () => clock);
    await auth.authenticate("good");
    await auth.authenticate("good");
    expect(seen).toHaveLength(1);
    clock += 11_000; // past exp, well within cacheSeconds: asked again
    await expect(auth.authenticate("good")).rejects.toMatchObject({ code: "auth.invalid" });
    expect(seen).toHaveLength(2);

    seen.length = 0;
    await expect(auth.authenticate("bad")).rejects.toMatchObject({ code: "auth.invalid" });
    await expect(auth.authenticate("bad")).rejects.toMatchObject({ code: "auth.invalid" });
    expect(seen).toHaveLength(1);
    clock += 6_000;
    await expect(auth.authenticate("bad")).rejects.toMatchObject({ code: "auth.invalid" });
    expect(seen).toHaveLength(2);
  });

  it("shares one request among concurrent calls with the same token", async () => {
    respond = (_token, res) => setTimeout(() => json(res, { active: true, workspace_id: "team-a" }), 50);
    const auth = authenticator();
    await Promise.all(Array.from({ length: 10 }, () => auth.authenticate("same")));
    expect(seen).toHaveLength(1);
  });

  it("answers 503 auth.introspection_unavailable when the endpoint is slow", async () => {
    respond = (_token, res) => setTimeout(() => json(res, { active: true, workspace_id: "team-a" }), 2_000);
    const started = Date.now();
    await expect(authenticator({ timeoutMs: 200 }).authenticate("slow")).rejects.toMatchObject({
      code: "auth.introspection_unavailable",
      status: 503,
    });
    expect(Date.now() - started).toBeLessThan(1_500);
  });

  it("answers 503 when the endpoint fails or answers something that is not RFC 7662 JSON, and caches no such failure", async () => {
    for (const reply of [
      (res: ServerResponse) => json(res, { error: "boom" }, 500),
      (res: ServerResponse) => {
        res.writeHead(200, { "content-type": "text/html" });
        res.end("<html>login</html>");
      },
      (res: ServerResponse) => json(res, [true]),
    ]) {
      respond = (_token, res) => reply(res);
      const auth = authenticator();
      await expect(auth.authenticate("t")).rejects.toMatchObject({ code: "auth.introspection_unavailable" });
      respond = (_token, res) => json(res, { active: true, workspace_id: "team-a" });
      await expect(auth.authenticate("t")).resolves.toMatchObject({ workspace: "team-a" });
    }
  });

  it("answers 503 when nothing listens at the endpoint", async () => {
    const down = createServer();
    await new Promise<void>((resolve) => down.listen(0, "127.0.0.1", resolve));
    const port = (down.address() as AddressInfo).port;
    await new Promise((resolve) => down.close(resolve));
    const config = introspectionConfigSchema.parse({
      url: `http://127.0.0.1:${port}/introspect`,
      clientId: "c",
      clientSecret: "s",
    });
    await expect(new IntrospectionAuthenticator(config).authenticate("t")).rejects.toMatchObject({
      code: "auth.introspection_unavailable",
      status: 503,
    });
  });
});
