/** A workspace's API keys: the list (prefixes, never secrets), a new key (its secret shown once), revoking one. */
import { AdminApiError } from "../api.js";
import { button, h, notice, replace, table, when } from "../dom.js";
import type { PageContext } from "../page.js";

export async function keysTab(
  { api, failed }: PageContext,
  workspace: string,
  area: HTMLElement,
): Promise<void> {
  const status = h("div", { class: "status", "aria-live": "polite" });
  const list = h("div");
  const name = h("input", { id: "key-name", autocomplete: "off", placeholder: "e.g. ci-runner" });
  const days = h("input", {
    id: "key-days",
    inputmode: "numeric",
    autocomplete: "off",
    placeholder: "never",
  });
  const daysError = h("span", { class: "field-error", "aria-live": "polite" });

  const draw = async () => {
    const keys = await api.keys(workspace);
    replace(
      list,
      table(
        ["Prefix", "Name", "Created", "Last used", "Expires", "State", ""],
        keys.map((key) => [
          h("code", null, key.prefix),
          key.name ?? "-",
          `${when(key.createdAt)}${key.createdBy ? ` by ${key.createdBy}` : ""}`,
          when(key.lastUsedAt),
          key.expiresAt ? when(key.expiresAt) : "never",
          key.revokedAt ? `revoked ${when(key.revokedAt)}` : "active",
          key.revokedAt
            ? ""
            : button(
                "Revoke",
                () => {
                  if (!window.confirm(`Revoke key ${key.prefix}? Calls with it are refused from now on.`))
                    return;
                  api
                    .revokeKey(key.prefix)
                    .then(() => draw())
                    .then(() => replace(status, notice("info", `Key ${key.prefix} revoked.`)))
                    .catch(failed);
                },
                { class: "danger", "aria-label": `Revoke key ${key.prefix}` },
              ),
        ]),
        "No API key for this workspace yet. Create one below: its holder calls the contract as this workspace.",
      ),
    );
  };

  const form = h(
    "form",
    {
      class: "inline-form",
      on: {
        submit: (event) => {
          event.preventDefault();
          daysError.textContent = "";
          const text = days.value.trim();
          if (text !== "" && !/^[1-9]\d*$/.test(text)) {
            daysError.textContent = "a whole number of days, or empty for never";
            return;
          }
          api
            .createKey(workspace, name.value.trim() || null, text === "" ? undefined : Number(text) * 86_400)
            .then((created) => {
              const secret = h("input", {
                readonly: true,
                value: created.key,
                id: "new-key",
                class: "secret",
              });
              replace(
                status,
                notice("info", `Key ${created.prefix} created. Its secret, shown this once:`),
                h("label", { for: "new-key", class: "visually-hidden" }, "The new key"),
                secret,
              );
              secret.select();
              name.value = "";
              days.value = "";
              return draw();
            })
            .catch((error: unknown) => {
              if (error instanceof AdminApiError)
                replace(status, notice("error", `${error.message} (${error.code})`));
              else failed(error);
            });
        },
      },
    },
    h("h2", null, "New key"),
    h("div", { class: "field" }, h("label", { for: "key-name" }, "Name"), name),
    h("div", { class: "field" }, h("label", { for: "key-days" }, "Expires in (days)"), days, daysError),
    h("button", { type: "submit" }, "Create key"),
  );
  replace(area, status, h("h2", null, "Keys"), list, form);
  await draw();
}
