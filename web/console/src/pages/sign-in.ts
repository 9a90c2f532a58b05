/**
 * Sign-in: an admin token (or an API key, refused with a reason: keys belong to workspaces).
 * The token is checked with one admin API call and then kept in memory only. A workspace API
 * key is refused by design (keys are scoped to one workspace and never carry admin rights):
 * its shape (`sp_<prefix>_<secret>`, src/auth/api-key-format.ts) lets the refusal say so
 * plainly rather than "no admin rights", which could read as a key missing a permission.
 */
import { AdminApiError } from "../api.js";
import { h, notice, replace } from "../dom.js";

export function signInForm(signIn: (token: string) => Promise<void>, message?: HTMLElement): HTMLElement {
  const input = h("input", {
    id: "token",
    name: "token",
    type: "password",
    autocomplete: "off",
    spellcheck: "false",
    required: true,
    "aria-describedby": "token-help",
  });
  const status = h("div", { class: "status", "aria-live": "polite" }, message);
  const submit = h("button", { type: "submit" }, "Sign in");
  const form = h(
    "form",
    {
      class: "sign-in",
      on: {
        submit: (event) => {
          event.preventDefault();
          const token = input.value.trim();
          if (token === "") return;
          submit.disabled = true;
          replace(status, notice("info", "Checking the token..."));
          signIn(token)
            .catch((error: unknown) => replace(status, notice("error", refusal(error, token))))
            .finally(() => {
              submit.disabled = false;
            });
        },
      },
    },
    h("h1", { tabindex: "-1" }, "sandpool console"),
    h("label", { for: "token" }, "Admin token"),
    input,
    h(
      "p",
      { id: "token-help", class: "help" },
      "An admin token (sandpool dev prints one as SANDPOOL_ADMIN_TOKEN; sandpool token --admin makes one). ",
      "It stays in this page's memory: reloading the page or signing out forgets it.",
    ),
    submit,
    status,
  );
  queueMicrotask(() => input.focus());
  return form;
}

/** A sandpool API key's shape (only the shape: the gateway decided it is valid). */
const API_KEY = /^sp_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/;

function refusal(error: unknown, token: string): string {
  if (error instanceof AdminApiError) {
    if (error.forbidden && API_KEY.test(token))
      return "Refused: this is a workspace API key. API keys belong to one workspace and are never admin credentials, by design: they call the contract (POST /sessions...), not the admin API. Sign in with an admin token (sandpool token --admin makes one).";
    if (error.forbidden)
      return "Refused: this token is valid but has no admin rights. The console is for admin tokens; workspace tokens and API keys call the contract, not the admin API.";
    if (error.unauthenticated) return `Refused: the gateway does not accept this token (${error.message}).`;
    if (error.code === "request.origin_denied")
      return "Refused: the gateway does not allow this page's origin. Add it to http.allowedOrigins (docs/console.md).";
    return `Refused: ${error.message} (${error.code}).`;
  }
  return `Could not sign in: ${error instanceof Error ? error.message : String(error)}`;
}
