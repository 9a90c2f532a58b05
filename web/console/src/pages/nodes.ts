/** Nodes: the engine nodes an edge places sessions on, their health, and drain / undrain. */
import type { NodeInfo } from "../api.js";
import { button, h, notice, replace, table, when } from "../dom.js";
import type { PageContext } from "../page.js";

const STALE_MS = 15_000;

export async function nodesPage({ api, main, failed }: PageContext): Promise<void> {
  const list = h("section", { "aria-label": "Nodes" }, h("p", null, "Loading..."));
  const status = h("div", { "aria-live": "polite" });
  replace(main, h("h1", { tabindex: "-1" }, "Nodes"), status, list);

  const draw = async () => {
    const nodes = await api.nodes();
    replace(
      list,
      table(
        ["Node", "URL", "State", "Health", "Leased", "Free warm", "Images", "Drain"],
        nodes.map((node) => [
          h("code", null, node.id),
          node.url,
          node.state,
          health(node),
          String(node.leased),
          Object.entries(node.freeWarm)
            .map(([pool, count]) => `${pool}: ${count}`)
            .join(", ") || "-",
          node.images.join(", "),
          button(
            node.draining ? "Undrain" : "Drain",
            () => {
              const drain = !node.draining;
              if (drain && !window.confirm(`Drain ${node.id}? It takes no new session; its sessions finish.`))
                return;
              api
                .drainNode(node.id, drain)
                .then(() => {
                  replace(status, notice("info", `${node.id} ${drain ? "drains" : "takes sessions again"}.`));
                  return draw();
                })
                .catch(failed);
            },
            { "aria-label": `${node.draining ? "Undrain" : "Drain"} node ${node.id}` },
          ),
        ]),
        "No node: this gateway runs on one host (--role all) and places sessions on its own engine. Nodes appear when edges (--role edge) place sessions on nodes (--role node): docs/deploying.md.",
      ),
    );
  };
  await draw();
}

function health(node: NodeInfo): string {
  const age = Date.now() - node.heartbeatAt;
  const seen = `heartbeat ${Math.round(age / 1000)} s ago (${when(node.heartbeatAt)})`;
  if (node.state === "lost") return `lost: ${seen}`;
  return age > STALE_MS ? `late: ${seen}` : `ok: ${seen}`;
}
