/**
 * A runtime used only by the bench's light gateway: `start` hands out a sandbox that is a
 * place on one of a few shared `sandpool sandbox` servers (session-farm.mjs), round robin,
 * so a gateway can hold a thousand leased sessions on a machine that could not run a
 * thousand real sandboxes. The gateway does the same work per session as with docker (its
 * store records, the inner session it creates, its timers); only the runtime is light.
 */
export class SharedServerRuntime {
  kind = "process";
  isolated = false;
  #endpoints;
  #next = 0;
  /** runtimeId -> what list() reports. */
  #started = new Map();

  constructor(endpoints) {
    if (endpoints.length === 0) throw new Error("the shared-server runtime needs at least one server");
    this.#endpoints = endpoints;
  }

  async start({ sandboxId, pool }) {
    const endpoint = this.#endpoints[this.#next++ % this.#endpoints.length];
    const runtimeId = `shared-${sandboxId}`;
    this.#started.set(runtimeId, {
      runtimeId,
      sandboxId,
      pool: pool.name,
      createdAt: Date.now(),
      running: true,
    });
    return { runtimeId, endpoint };
  }

  async destroy(runtimeId) {
    this.#started.delete(runtimeId);
  }

  async list() {
    return [...this.#started.values()];
  }

  async close() {}
}
