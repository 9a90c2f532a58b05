/**
 * The operator console (docs/console.md): sign-in, then pages picked by the URL's fragment
 * (`#/`, `#/workspaces`, `#/workspaces/<id>/<tab>`, `#/nodes`), each drawn from admin API
 * answers. The admin token is held by the AdminApi object alone, in this page's memory.
 */
import { AdminApi, AdminApiError } from "./api.js";
import { button, h, notice, replace } from "./dom.js";
import type { Page, PageContext } from "./page.js";
import { nodesPage } from "./pages/nodes.js";
import { overviewPage } from "./pages/overview.js";
import { signInForm } from "./pages/sign-in.js";
import { workspacePage } from "./pages/workspace.js";
import { workspacesPage } from "./pages/workspaces.js";

const root = document.getElementById("app")!;
let api: AdminApi | undefined;
const leave: (() => void)[] = [];

const routes: [RegExp, Page, string][] = [
  [/^#?\/?$/, overviewPage, "overview"],
  [/^#\/workspaces\/?$/, workspacesPage, "workspaces"],
  [/^#\/workspaces\/([^/]+)(?:\/([a-z]+))?$/, workspacePage, "workspaces"],
  [/^#\/nodes\/?$/, nodesPage, "nodes"],
];

function showSignIn(message?: HTMLElement): void {
  for (const cleanup of leave.splice(0)) cleanup();
  api = undefined;
  replace(
    root,
    signInForm(async (token) => {
      const candidate = new AdminApi(token);
      await candidate.signIn();
      api = candidate;
      render();
    }, message),
  );
}

function signOut(message: string): void {
  showSignIn(notice("info", message));
}

function failed(error: unknown): void {
  if (error instanceof AdminApiError && error.unauthenticated) {
    showSignIn(notice("error", `Signed out: the gateway no longer accepts this token (${error.message}).`));
    return;
  }
  console.error(error);
}

function render(): void {
  if (!api) {
    showSignIn();
    return;
  }
  for (const cleanup of leave.splice(0)) cleanup();
  const hash = location.hash;
  const route = routes.find(([pattern]) => pattern.test(hash));
  const main = h("main", { id: "main" });
  const link = (href: string, label: string, name: string) =>
    h("a", { href, ...(route?.[2] === name ? { "aria-current": "page" } : {}) }, label);
  replace(
    root,
    h("a", { class: "skip", href: "#main", on: { click: skipToMain } }, "Skip to content"),
    h(
      "header",
      { class: "top" },
      h("span", { class: "brand" }, "sandpool"),
      h(
        "nav",
        { class: "top-nav", "aria-label": "Console" },
        link("#/", "Overview", "overview"),
        link("#/workspaces", "Workspaces", "workspaces"),
        link("#/nodes", "Nodes", "nodes"),
      ),
      button("Sign out", () => signOut("Signed out. The token is forgotten."), { class: "secondary" }),
    ),
    main,
  );
  const context: PageContext = {
    api,
    main,
    onLeave: (cleanup) => leave.push(cleanup),
    failed: (error) => {
      failed(error);
      if (api && !(error instanceof AdminApiError && error.unauthenticated))
        main.prepend(notice("error", error instanceof Error ? error.message : String(error)));
    },
  };
  if (!route) {
    replace(
      main,
      h("h1", { tabindex: "-1" }, "No such page"),
      h("p", null, h("a", { href: "#/" }, "Overview")),
    );
    return;
  }
  const params = (route[0].exec(hash) ?? []).slice(1).map((part) => (part ? decodeURIComponent(part) : ""));
  Promise.resolve(route[1](context, ...params))
    .catch(context.failed)
    .finally(() => main.querySelector<HTMLElement>("h1")?.focus({ preventScroll: true }));
}

function skipToMain(event: Event): void {
  event.preventDefault();
  document.getElementById("main")?.querySelector<HTMLElement>("h1")?.focus();
}

window.addEventListener("hashchange", () => {
  if (location.hash !== "#main") render();
});
render();
