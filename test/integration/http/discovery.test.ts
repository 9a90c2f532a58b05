/**
 * Discovery through the real gateway: `GET /openapi.json` per caller (no credential or a
 * workspace token: the public contract; an admin token: every operation; a bad token: 401)
 * and the docs page at `/docs` (and `/docs/`), served offline from the package. Both are open, but the
 * transport checks (Host) still apply to them.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintToken } from "../../../src/auth/dev-keys.js";
import { openApiDocument } from "../../../src/discovery/openapi-document.js";
import { SANDPOOL_VERSION } from "../../../src/version.js";
import { assertSchema } from "../../support/contract.js";
import { startTestGateway, TEST_SECRET, type TestGateway } from "../../support/gateway-harness.js";
import { rawRequest } from "../../support/raw-http.js";

let harness: TestGateway;
let adminToken: string;

beforeAll(async () => {
  harness = await startTestGateway();
  adminToken = await mintToken({ secret: TEST_SECRET, admin: true, ttlSeconds: 600 });
});
afterAll(() => harness?.close());

async function openapi(token?: string): Promise<Response> {
  return fetch(`${harness.url}/openapi.json`, {
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
  });
}

describe("GET /openapi.json", () => {
  it("shows a caller without a credential the public document, nothing of the admin API", async () => {
    const answer = await openapi();
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-type")).toContain("application/json");
    expect(answer.headers.get("x-sandpool-version")).toBe(SANDPOOL_VERSION);
    expect(answer.headers.get("vary")).toContain("Authorization");
    const document = (await answer.json()) as { paths: Record<string, unknown> };
    expect(document).toEqual(openApiDocument("public"));
    expect(Object.keys(document.paths)).toContain("/sessions/{session_id}/exec");
    expect(Object.keys(document.paths).some((path) => path.startsWith("/admin/"))).toBe(false);
  });

  it("shows a workspace token the same public document", async () => {
    const answer = await openapi(await harness.token("team-a"));
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual(openApiDocument("public"));
  });

  it("shows an admin token every operation, the admin API under /admin/v1", async () => {
    const answer = await openapi(adminToken);
    expect(answer.status).toBe(200);
    const document = (await answer.json()) as { paths: Record<string, unknown> };
    expect(document).toEqual(openApiDocument("admin"));
    expect(document.paths["/admin/v1/keys"]).toBeDefined();
  });

  it.each([
    ["a forged token", "Bearer not-a-token"],
    ["a malformed header", "Basic dXNlcjpwYXNz"],
  ])("refuses %s with 401", async (_what, authorization) => {
    const answer = await fetch(`${harness.url}/openapi.json`, { headers: { authorization } });
    expect(answer.status).toBe(401);
    const body = await answer.json();
    assertSchema("Error", body);
    expect((body as { detail: { code: string } }).detail.code).toMatch(/^auth\./);
  });

  it("still checks the Host header", async () => {
    const answer = await rawRequest(harness.url, "GET", "/openapi.json", {
      headers: { host: "evil.example" },
    });
    expect(answer.status).toBe(403);
    expect(JSON.parse(answer.body)).toMatchObject({ detail: { code: "request.host_denied" } });
  });
});

describe("GET /docs", () => {
  it.each(["/docs", "/docs/"])(
    "serves the docs page at %s without a credential, every file it loads from this gateway",
    async (at) => {
      const page = await fetch(`${harness.url}${at}`);
      expect(page.status).toBe(200);
      expect(page.headers.get("content-type")).toContain("text/html");
      expect(page.headers.get("content-security-policy")).toContain("script-src 'self'");
      const html = await page.text();
      const files = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map(([, file]) => file!);
      expect(files.length).toBeGreaterThanOrEqual(4);
      for (const file of files) {
        expect(file, "no file from elsewhere").not.toMatch(/^(?:https?:)?\/\//);
        const url = new URL(file, `${harness.url}${at}`);
        const asset = await fetch(url);
        expect(asset.status, url.pathname).toBe(200);
        expect(asset.headers.get("x-content-type-options")).toBe("nosniff");
        await asset.arrayBuffer();
      }
      const bundle = await fetch(`${harness.url}/docs/swagger-ui-bundle.js`);
      expect(bundle.headers.get("content-type")).toContain("javascript");
      expect(await bundle.text()).toContain("SwaggerUIBundle");
      const start = await (await fetch(`${harness.url}/docs/start-docs.js`)).text();
      expect(start).toContain('"../openapi.json"');
    },
  );

  it("answers 404 for a file that is not the docs page's", async () => {
    for (const name of ["index.html", "package.json", "swagger-ui-bundle.js.map", "..%2Fpackage.json"]) {
      const answer = await fetch(`${harness.url}/docs/${name}`);
      expect([400, 404], name).toContain(answer.status);
      assertSchema("Error", await answer.json());
    }
  });
});
