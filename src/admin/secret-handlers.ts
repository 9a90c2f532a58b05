/**
 * Workspace secrets in the admin API. A secret's value arrives in a PUT and is never answered,
 * logged or audited: every answer is its description (name and binding). Setting and removing
 * are audited in admin_audit by the repository, in the change's own transaction.
 */
import type { z } from "zod";
import { adminOperations } from "../operations/admin-operations.js";
import type { secretViewSchema } from "../operations/admin-schemas/secret-schemas.js";
import type { OperationHandlers } from "../operations/handler.js";
import { handlersFor } from "../operations/typed-handlers.js";
import { bindingOf } from "../secrets/secret-binding-schema.js";
import type { SecretStore } from "../secrets/secret-store.js";
import type { SecretDescription } from "../secrets/workspace-secrets.js";
import { actorOf, answer, noContent } from "./admin-call.js";

export type SecretView = z.output<typeof secretViewSchema>;

export function secretHandlers(secrets: Pick<SecretStore, "set" | "list" | "remove">): OperationHandlers {
  return handlersFor(adminOperations, {
    "admin.secrets.put": async ({ args, caller, log }) => {
      const actor = actorOf(caller);
      const workspace = args.params.ws;
      const name = args.params.name;
      const { value, ...flat } = args.body;
      const { description, created } = await secrets.set(
        workspace,
        name,
        { value, binding: bindingOf(flat) },
        actor,
      );
      log.info(
        { workspace, secret: name, hosts: description.binding.hosts, created, actor },
        "workspace secret set",
      );
      return answer(viewOf(workspace, description), created ? 201 : 200);
    },

    "admin.secrets.list": async ({ args }) => {
      const workspace = args.params.ws;
      return answer({ items: (await secrets.list(workspace)).map((secret) => viewOf(workspace, secret)) });
    },

    "admin.secrets.delete": async ({ args, caller, log }) => {
      const actor = actorOf(caller);
      const workspace = args.params.ws;
      await secrets.remove(workspace, args.params.name, actor);
      log.info({ workspace, secret: args.params.name, actor }, "workspace secret removed");
      return noContent();
    },
  });
}

/** A secret's description in the flat form an operator writes it in. */
export function viewOf(workspace: string, secret: SecretDescription): SecretView {
  const { hosts, ports, paths, methods, presentation } = secret.binding;
  return {
    workspace,
    name: secret.name,
    hosts,
    ...(ports === undefined ? {} : { ports }),
    ...(paths === undefined ? {} : { paths }),
    ...(methods === undefined ? {} : { methods }),
    ...("basicAuth" in presentation
      ? { basicAuth: { username: presentation.basicAuth.username } }
      : { header: presentation.header, template: presentation.template }),
    createdAt: secret.createdAt,
    updatedAt: secret.updatedAt,
  };
}
