/**
 * The operation registry: every operation declared once, looked up by id or by method and
 * path. Registration refuses a second operation with the same id or the same binding (method
 * and path, with `{param}` segments alike), so two declarations can never shadow each other;
 * the registry is frozen once built. Route tables, 405 `Allow`, the OpenAPI document and the
 * per-operation tests are generated from it.
 */
import { adminOperations } from "./admin-operations.js";
import { contractOperations } from "./contract-operations.js";
import type { HttpMethod, OperationGroup, OperationSpec } from "./operation.js";
import { serviceOperations } from "./service-operations.js";

export class OperationRegistry {
  readonly #byId = new Map<string, OperationSpec>();
  readonly #byBinding = new Map<string, OperationSpec>();
  #frozen = false;

  register(operation: OperationSpec): this {
    if (this.#frozen) throw new Error(`the registry is frozen: cannot register ${operation.id}`);
    if (this.#byId.has(operation.id)) throw new Error(`operation ${operation.id} is registered twice`);
    const binding = bindingKey(operation.group, operation.method, operation.path);
    const taken = this.#byBinding.get(binding);
    if (taken) {
      throw new Error(
        `${operation.id} binds ${operation.method} ${operation.path}, which ${taken.id} already binds`,
      );
    }
    this.#byId.set(operation.id, operation);
    this.#byBinding.set(binding, operation);
    return this;
  }

  freeze(): this {
    this.#frozen = true;
    return this;
  }

  get(id: string): OperationSpec | undefined {
    return this.#byId.get(id);
  }

  all(group?: OperationGroup): OperationSpec[] {
    const operations = [...this.#byId.values()];
    return group ? operations.filter((operation) => operation.group === group) : operations;
  }

  /** The operation a group binds to this method and path template, if any. */
  bound(group: OperationGroup, method: HttpMethod, path: string): OperationSpec | undefined {
    return this.#byBinding.get(bindingKey(group, method, path));
  }

  /** The methods a group answers on a path template (`GET, DELETE`), for 405 answers. */
  allowedMethods(group: OperationGroup, path: string): HttpMethod[] {
    return this.all(group)
      .filter((operation) => samePath(operation.path, path))
      .map((operation) => operation.method);
  }
}

/** `/sessions/{id}` and `/sessions/{session}` bind the same requests. */
function bindingKey(group: OperationGroup, method: HttpMethod, path: string): string {
  return `${group} ${method} ${path.replace(/\{[^}]+\}/g, "{}")}`;
}

function samePath(a: string, b: string): boolean {
  return a.replace(/\{[^}]+\}/g, "{}") === b.replace(/\{[^}]+\}/g, "{}");
}

/** `/sessions/{id}` -> `/sessions/:id`: the pattern a Hono route table takes. */
export function honoPath(path: string): string {
  return path.replace(/\{([^}]+)\}/g, ":$1");
}

/** Every operation sandpool serves, registered once and frozen. */
export const operations: OperationRegistry = (() => {
  const registry = new OperationRegistry();
  for (const operation of [...contractOperations, ...adminOperations, ...serviceOperations])
    registry.register(operation);
  return registry.freeze();
})();
