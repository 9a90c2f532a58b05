/**
 * The operator console (docs/console.md) in a real browser: headless Chromium from Debian's
 * package driven by puppeteer-core (test/support/console-browser.ts), against `sandpool dev`
 * from the built CLI. As an operator would: a workspace API key and a workspace token are
 * refused with a reason, an admin token signs in; the overview charts server errors; a session
 * is ended; a policy edit is refused next to its field, then reviewed as a diff, applied, and
 * seen in force through the contract; explain says why a call would be refused, and checks a
 * pasted token; a usage chart is read (its figures) and downloaded as CSV; a node is drained
 * and undrained on an edge (an edge and a node started in this process, test/support/
 * edge-node-stack.ts: dev has no nodes); every page
 * is drawn at 1280x800 and at a phone's width without sideways scrolling, with no script
 * error and nothing the Content-Security-Policy blocked. Screenshots of each page go to
 * test-artifacts/console/ (git-ignored); SANDPOOL_UPDATE_SCREENSHOT=1 also rewrites the
 * README's (docs/images/console-overview.png).
 *
 * Needs `npm run build` and Chromium: without it the file is skipped, and under CI=true it
 * fails (.ci/run installs it).
 */
import { copyFileSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Browser, Page } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertAdminResponse } from "../support/admin-openapi.js";
import { chromiumInstalled, launchChromium } from "../support/console-browser.js";
import { type DevCliGateway, startDevCliGateway } from "../support/dev-cli-gateway.js";
import { NODE_ID, startEdgeNodeStack } from "../support/edge-node-stack.js";
import { testAdminToken } from "../support/gateway-harness.js";
import { redisAvailable } from "../support/redis.js";
import { requireService } from "../support/require-service.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const artifacts = path.join(root, "test-artifacts/console");
const downloads = path.join(artifacts, "downloads");
/** A page expression: the tab's notice holds `words`. */
const noticeSays = (words: string) =>
  `(document.querySelector("#tab .notice")?.textContent ?? "").includes(${JSON.stringify(words)})`;
const available = await requireService("Chromium", chromiumInstalled, {
  start: "apt-get install chromium (Debian's package; .ci/run installs it)",
});

describe.skipIf(!available)("the operator console in Chromium", () => {
  let gateway: DevCliGateway;
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];

  const shot = async (name: string) => {
    await page.screenshot({ path: path.join(artifacts, `${name}.png`), fullPage: true });
  };
  const go = async (hash: string, ready: string) => {
    await page.evaluate(`location.hash = ${JSON.stringify(hash)}`);
    await page.waitForSelector(ready);
  };
  const text = (selector: string) => page.$eval(selector, (element) => element.textContent ?? "");
  /** An admin API call, its answer checked against the admin document under `route` (`pathname` unless told). */
  const admin = async (pathname: string, init: RequestInit = {}, route = pathname, base = gateway.url) => {
    const token = base === gateway.url ? gateway.adminToken : edgeAdminToken;
    const response = await fetch(`${base}${pathname}`, {
      ...init,
      headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    });
    const body = (await response.json()) as Record<string, unknown>;
    assertAdminResponse(init.method ?? "get", route, response.status, body);
    return { status: response.status, body };
  };
  let edgeAdminToken = "";
  const contract = (method: string, pathname: string) =>
    fetch(`${gateway.url}${pathname}`, {
      method,
      headers: { Authorization: `Bearer ${gateway.devToken}`, "Content-Type": "application/json" },
      ...(method === "POST" ? { body: "{}" } : {}),
    });
  /** Fills the policy form's field `name` with `value` (replacing what it held). */
  const fill = async (selector: string, value: string) => {
    await page.$eval(selector, (element) => {
      (element as unknown as { value: string }).value = "";
    });
    await page.type(selector, value);
  };

  beforeAll(async () => {
    mkdirSync(downloads, { recursive: true });
    gateway = await startDevCliGateway("console");
    browser = await launchChromium();
    page = await browser.newPage();
    page.setDefaultTimeout(15_000);
    await page.setViewport({ width: 1280, height: 800 });
    page.on("pageerror", (error) => problems.push(`page error: ${(error as Error).message}`));
    page.on("console", (message) => {
      if (/Content Security Policy|Refused to/i.test(message.text())) problems.push(message.text());
    });
    page.on("dialog", (dialog) => void dialog.accept());
    const cdp = await page.createCDPSession();
    await cdp.send("Browser.setDownloadBehavior", { behavior: "allow", downloadPath: downloads });
  }, 150_000);

  afterAll(async () => {
    await browser?.close();
    await gateway?.stop();
  });

  it("serves the console with a strict Content-Security-Policy and refuses a token without admin rights", async () => {
    const answer = await fetch(`${gateway.url}/console/`);
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-security-policy")).toMatch(/default-src 'self'.*script-src 'self'/);
    expect(await answer.text()).not.toMatch(/<script>|<style|style=|https?:\/\//);

    await page.goto(`${gateway.url}/console/`);
    await page.waitForSelector("#token");
    await shot("sign-in");
    // A workspace API key is refused by design, and the form says so in those words.
    const created = await admin("/admin/v1/keys", {
      method: "POST",
      body: JSON.stringify({ workspace: "console-keys", name: "not-an-admin" }),
    });
    expect(created.status).toBe(201);
    await page.type("#token", String(created.body.key));
    await page.keyboard.press("Enter");
    await page.waitForSelector(".notice.error");
    expect(await text(".notice.error")).toMatch(/workspace API key.*never admin credentials, by design/);
    await fill("#token", gateway.devToken);
    await page.keyboard.press("Enter");
    await page.waitForSelector(".notice.error");
    expect(await text(".notice.error")).toMatch(/valid but has no admin rights/);
    await shot("sign-in-refused");
  });

  it("signs in with an admin token and shows the overview: pools, sessions, rates", async () => {
    await fill("#token", gateway.adminToken);
    await page.keyboard.press("Enter");
    await page.waitForSelector(".cards .card");
    expect(await text("main h1")).toBe("Overview");
    expect(await text("main table")).toMatch(/default/);
    await page.waitForFunction('document.querySelectorAll("figure.chart canvas").length >= 3');
    expect(await text(".cards")).toMatch(/Server errors, last hour/);
    expect(await text("section.charts")).toMatch(/server errors per minute/);
    await shot("overview");
    if (process.env.SANDPOOL_UPDATE_SCREENSHOT === "1")
      copyFileSync(path.join(artifacts, "overview.png"), path.join(root, "docs/images/console-overview.png"));
  });

  it("is reachable by keyboard: Tab goes from the skip link through the navigation", async () => {
    // From the first stop on the page (the skip link), as after a reload.
    await page.focus("a.skip");
    const focused: string[] = [
      String(await page.evaluate('document.activeElement?.textContent?.trim() ?? ""')),
    ];
    for (let i = 0; i < 4; i++) {
      await page.keyboard.press("Tab");
      focused.push(String(await page.evaluate('document.activeElement?.textContent?.trim() ?? ""')));
    }
    expect(focused).toEqual(["Skip to content", "Overview", "Workspaces", "Nodes", "Sign out"]);
  });

  it("ends a session", async () => {
    const created = await contract("POST", "/sessions");
    expect(created.status).toBe(201);
    const { session_id: id } = (await created.json()) as { session_id: string };
    await go("#/workspaces/dev/sessions", "#tab table");
    expect(await text("#tab table")).toContain(id);
    await shot("workspace-sessions");
    await page.click(`button[aria-label="End session ${id}"]`);
    await page.waitForFunction(noticeSays("ended"));
    expect(await text("#tab .empty")).toMatch(/No session of this workspace is running/);
    expect((await contract("GET", `/sessions/${id}`)).status).toBe(404);
  });

  it("edits a policy: a refused value next to its field, a diff, then the change in force through the API", async () => {
    await go("#/workspaces/dev/policy", "#field-enabled");
    await fill("#field-maxConcurrentSessions", "two");
    await page.click(".policy-form button[type=submit]");
    await page.waitForSelector("#field-maxConcurrentSessions-error");
    expect(await text("#field-maxConcurrentSessions-error")).toMatch(/whole number/);

    // Above the deployment's ceiling: the API refuses it (422), next to the field.
    await fill("#field-maxConcurrentSessions", "100000");
    await page.click(".policy-form button[type=submit]");
    await page.waitForSelector("ins");
    await page.click(".actions button");
    await page.waitForSelector("#field-maxConcurrentSessions-error");
    expect(await text("#field-maxConcurrentSessions-error")).toMatch(/maxConcurrentSessions/);
    await shot("workspace-policy-refused");

    await fill("#field-maxConcurrentSessions", "");
    await fill("#field-enabled", "false");
    await page.click(".policy-form button[type=submit]");
    await page.waitForSelector("ins");
    expect(await page.$eval(".review + p + .table-scroll", (e) => e.textContent)).toMatch(
      /enabled\s*true\s*false/,
    );
    await shot("workspace-policy-diff");
    await page.click(".actions button");
    await page.waitForFunction(noticeSays("Applied"));
    expect(await text('[data-field="enabled"]')).toBe("false");
    await shot("workspace-policy");

    const policy = await admin("/admin/v1/workspaces/dev/policy", {}, "/admin/v1/workspaces/{ws}/policy");
    expect(policy.body).toMatchObject({ configured: true, effective: { enabled: false } });
    const refused = await contract("POST", "/sessions");
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ detail: { code: "policy.workspace_disabled" } });
  });

  it("explains a refusal from the decision trace", async () => {
    await go("#/workspaces/dev/explain", "#question");
    await page.click(".explain-form button[type=submit]");
    await page.waitForSelector(".decision");
    expect(await text(".decision")).toMatch(/Refused: policy\.workspace_disabled/);
    expect(await text(".trace table")).toMatch(/deny/);
    await shot("workspace-explain");
    // Would this token be allowed? The dev workspace's token: valid, of workspace dev; never shown back.
    await page.type("#explain-token", gateway.devToken);
    await page.click(".explain-form button[type=submit]");
    await page.waitForSelector(".token-verdict");
    expect(await text(".token-verdict")).toMatch(/Token: valid, of workspace dev/);
    expect(await text(".trace table")).toMatch(/^Step.*token\s*pass/s);
    expect(await page.content()).not.toContain(gateway.devToken);
  });

  it("reads a usage chart's figures and downloads them as CSV", async () => {
    await go("#/workspaces/dev/usage", "figure.chart canvas");
    // The session opened above counts today; the usage backlog reaches Postgres within a second or two.
    await expect
      .poll(
        async () => {
          await go("#/workspaces/dev/audit", "#tab h2");
          await go("#/workspaces/dev/usage", "figure.chart canvas");
          return page.$$eval("figure.chart", (figures) => {
            const sessions = figures.find((f) => /Sessions per day/.test(f.textContent ?? ""));
            const cells = [...(sessions?.querySelectorAll("tbody tr:last-child td") ?? [])];
            return cells.map((cell) => cell.textContent).join("|");
          });
        },
        { timeout: 20_000, interval: 1_000 },
      )
      .toMatch(/^[^|]+\|[1-9]/);
    await page.click("figure.chart details summary");
    await shot("workspace-usage");
    await page.click(".actions button");
    await expect.poll(() => readdirSync(downloads).filter((name) => name.endsWith(".csv")).length).toBe(1);
    const csv = readFileSync(
      path.join(downloads, readdirSync(downloads).find((n) => n.endsWith(".csv"))!),
      "utf8",
    );
    expect(csv.split("\r\n")[0]).toMatch(/^workspace,start,sessions,execCalls/);
  });

  it("shows the audit rows, keys, the workspaces and the nodes, each with an empty state that says what to do", async () => {
    await go("#/workspaces/dev/audit", "#tab table");
    expect(await text("#tab table")).toMatch(/policy\.edit/);
    await shot("workspace-audit");

    await go("#/workspaces/dev/keys", "#tab .empty");
    expect(await text("#tab .empty")).toMatch(/No API key/);
    await page.type("#key-name", "console-test");
    await page.click(".inline-form button[type=submit]");
    await page.waitForSelector("#new-key");
    expect(await page.$eval("#new-key", (input) => (input as unknown as { value: string }).value)).toMatch(
      /\S{20,}/,
    );
    await shot("workspace-keys");

    await go("#/workspaces", "#search");
    await page.waitForSelector("main table");
    expect(await text("main table")).toMatch(/dev/);
    await shot("workspaces");

    await go("#/nodes", "main .empty");
    expect(await text("main .empty")).toMatch(/--role all/);
    await shot("nodes");
  });

  it("fits a phone's width on every page", async () => {
    // A phone's width (isMobile would reload the page, and a reload forgets the token).
    await page.setViewport({ width: 390, height: 844 });
    for (const [hash, name] of [
      ["#/", "overview"],
      ["#/workspaces", "workspaces"],
      ["#/workspaces/dev/policy", "workspace-policy"],
      ["#/workspaces/dev/usage", "workspace-usage"],
      ["#/nodes", "nodes"],
    ] as const) {
      await go(hash, "main h1");
      await page.waitForNetworkIdle({ idleTime: 300 });
      expect(Number(await page.evaluate("document.documentElement.scrollWidth")), name).toBeLessThanOrEqual(
        390,
      );
      await shot(`phone-${name}`);
    }
    await page.setViewport({ width: 1280, height: 800 });
  });

  it("drains and undrains a node of an edge from the nodes page", async () => {
    // Dev runs on one host and has no nodes: an edge and a node in this process (process
    // sandboxes, Redis for the registry), the console served by the edge as by any gateway.
    if (!(await redisAvailable())) throw new Error("the drain check needs Redis at 127.0.0.1:6379");
    const stack = await startEdgeNodeStack({ consoleDir: path.join(root, "dist/console-assets") });
    const edgePage = await browser.newPage();
    try {
      edgeAdminToken = await testAdminToken("op");
      edgePage.setDefaultTimeout(15_000);
      edgePage.on("pageerror", (error) => problems.push(`edge page error: ${(error as Error).message}`));
      edgePage.on("dialog", (dialog) => void dialog.accept());
      await edgePage.goto(`${stack.edge.url}/console/`);
      await edgePage.waitForSelector("#token");
      await edgePage.type("#token", edgeAdminToken);
      await edgePage.keyboard.press("Enter");
      await edgePage.waitForSelector(".cards .card");
      await edgePage.evaluate('location.hash = "#/nodes"');
      await edgePage.waitForSelector(`button[aria-label="Drain node ${NODE_ID}"]`);
      await edgePage.click(`button[aria-label="Drain node ${NODE_ID}"]`);
      await edgePage.waitForSelector(`button[aria-label="Undrain node ${NODE_ID}"]`);
      expect(await edgePage.$eval("main", (m) => m.textContent ?? "")).toMatch(/drains/);
      await edgePage.screenshot({ path: path.join(artifacts, "nodes-draining.png"), fullPage: true });
      const drained = await admin("/admin/v1/nodes", {}, "/admin/v1/nodes", stack.edge.url);
      expect(drained.body.items).toEqual([expect.objectContaining({ id: NODE_ID, draining: true })]);

      await edgePage.click(`button[aria-label="Undrain node ${NODE_ID}"]`);
      await edgePage.waitForSelector(`button[aria-label="Drain node ${NODE_ID}"]`);
      const undrained = await admin("/admin/v1/nodes", {}, "/admin/v1/nodes", stack.edge.url);
      expect(undrained.body.items).toEqual([expect.objectContaining({ id: NODE_ID, draining: false })]);
    } finally {
      await edgePage.close();
      await stack.close();
    }
  }, 90_000);

  it("signs out and forgets the token; nothing was blocked or broken on the way", async () => {
    await go("#/", ".cards .card");
    await page.click("header button");
    await page.waitForSelector("#token");
    expect(await text(".notice")).toMatch(/Signed out/);
    expect(problems).toEqual([]);
  });
});
