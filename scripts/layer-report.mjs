#!/usr/bin/env node
/**
 * Do the top-level folders of src/ form layers? Reads dependency-cruiser's JSON (runs
 * `depcruise src` itself, or reads the file named by `--from <file>`), folds the file imports
 * into a graph of folders (an edge's weight: how many file imports it stands for) and prints:
 *
 * - the folders that import each other in a circle, directly or through others (the
 *   strongly connected parts of the folder graph), and the pairs that import each other;
 * - the layers: the order of folders, lowest first, that the fewest file imports go against
 *   (exact, per strongly connected part), and the imports that still do ("back-imports").
 *
 * A back-import is an import from a folder to one that, directly or through others, imports
 * it back, counted so that removing the back-imports alone would leave the folders in layers:
 * for two folders importing each other, the direction with fewer imports. `--max <n>` exits 1
 * when there are more than n (`npm run lint` runs it with the ceiling the project holds to,
 * and `--summary`: one line); `--json` prints the figures as JSON.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

const args = process.argv.slice(2);
const option = (name) => {
  const at = args.indexOf(name);
  return at === -1 ? undefined : args[at + 1];
};
const max = option("--max") === undefined ? undefined : Number(option("--max"));
const from = option("--from");

const cruise = JSON.parse(
  from
    ? readFileSync(from, "utf8")
    : execFileSync(
        "npx",
        ["depcruise", "src", "--config", ".dependency-cruiser.cjs", "--output-type", "json"],
        {
          encoding: "utf8",
          maxBuffer: 256 * 1024 * 1024,
        },
      ),
);

/** `src/<folder>/...` to its folder; files directly in src/ (version.ts) belong to none. */
const folderOf = (path) => /^src\/([^/]+)\//.exec(path)?.[1];

/** Folder edges: "a>b" to the file imports (source, target) it stands for. */
const edges = new Map();
const folders = new Set();
for (const module of cruise.modules) {
  const a = folderOf(module.source);
  if (!a) continue;
  folders.add(a);
  for (const dependency of module.dependencies) {
    const b = folderOf(dependency.resolved);
    if (!b || b === a) continue;
    const key = `${a}>${b}`;
    if (!edges.has(key)) edges.set(key, []);
    edges.get(key).push(`${module.source} -> ${dependency.resolved}`);
  }
}
const weight = (a, b) => edges.get(`${a}>${b}`)?.length ?? 0;
const names = [...folders].sort();
const importsOf = new Map(names.map((name) => [name, names.filter((other) => weight(name, other) > 0)]));

/** Tarjan's strongly connected components. */
function components() {
  let index = 0;
  const order = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const found = [];
  const visit = (v) => {
    order.set(v, index);
    low.set(v, index);
    index += 1;
    stack.push(v);
    onStack.add(v);
    for (const w of importsOf.get(v)) {
      if (!order.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v), order.get(w)));
      }
    }
    if (low.get(v) === order.get(v)) {
      const part = [];
      let w;
      do {
        w = stack.pop();
        onStack.delete(w);
        part.push(w);
      } while (w !== v);
      found.push(part.sort());
    }
  };
  for (const v of names) if (!order.has(v)) visit(v);
  return found;
}

/**
 * The order of a strongly connected part, lowest first, with the fewest imports against it
 * (a minimum feedback arc set): dynamic programming over subsets, exact up to 24 folders
 * (src/ has 30 or so, and its circles are smaller); above that a greedy order improved by
 * moving one folder at a time. An import goes against the order when it points to a folder
 * placed above its own.
 */
function layerOrder(part) {
  const n = part.length;
  if (n === 1) return part;
  if (n > 24) return improved(greedyOrder(part));
  // into[v] as two tables over halves of a set: the imports from the set's folders to v.
  const half = Math.ceil(n / 2);
  const lowMask = (1 << half) - 1;
  const tables = part.map((v) => {
    const low = new Int32Array(1 << half);
    const high = new Int32Array(1 << (n - half));
    for (let set = 1; set < low.length; set += 1) {
      const u = 31 - Math.clz32(set);
      low[set] = low[set & ~(1 << u)] + weight(part[u], v);
    }
    for (let set = 1; set < high.length; set += 1) {
      const u = 31 - Math.clz32(set);
      high[set] = high[set & ~(1 << u)] + weight(part[half + u], v);
    }
    return { low, high };
  });
  const size = 2 ** n;
  const best = new Int32Array(size).fill(0x7fffffff);
  const choice = new Int8Array(size).fill(-1);
  best[0] = 0;
  for (let set = 0; set < size; set += 1) {
    const here = best[set];
    for (let v = 0; v < n; v += 1) {
      if (set & (1 << v)) continue;
      const next = set | (1 << v);
      const cost = here + tables[v].low[set & lowMask] + tables[v].high[set >>> half];
      if (cost < best[next]) {
        best[next] = cost;
        choice[next] = v;
      }
    }
  }
  const order = [];
  for (let set = size - 1; set !== 0; set &= ~(1 << choice[set])) order.unshift(part[choice[set]]);
  return order;
}

/** Imports against an order (lowest first). */
function against(order) {
  let count = 0;
  for (let i = 0; i < order.length; i += 1)
    for (let j = i + 1; j < order.length; j += 1) count += weight(order[i], order[j]);
  return count;
}

/** Moves single folders while that lowers the imports against the order. */
function improved(order) {
  let current = order;
  let cost = against(current);
  for (let changed = true; changed; ) {
    changed = false;
    for (let i = 0; i < current.length; i += 1) {
      for (let j = 0; j < current.length; j += 1) {
        if (i === j) continue;
        const moved = current.filter((_, at) => at !== i);
        moved.splice(j, 0, current[i]);
        const movedCost = against(moved);
        if (movedCost < cost) [current, cost, changed] = [moved, movedCost, true];
      }
    }
  }
  return current;
}

/** Lowest first: repeatedly the folder whose imports into the rest outweigh least what the rest imports of it. */
function greedyOrder(part) {
  const left = new Set(part);
  const order = [];
  while (left.size > 0) {
    let pick;
    let score = Number.POSITIVE_INFINITY;
    for (const v of left) {
      let s = 0;
      for (const u of left) s += weight(v, u) - weight(u, v);
      if (s < score) [pick, score] = [v, s];
    }
    left.delete(pick);
    order.push(pick);
  }
  return order;
}

const parts = components();
const circles = parts.filter((part) => part.length > 1);
const backImports = [];
for (const part of circles) {
  const order = layerOrder(part);
  const height = new Map(order.map((name, at) => [name, at]));
  for (const a of part)
    for (const b of part)
      if (height.get(b) > height.get(a))
        for (const edge of edges.get(`${a}>${b}`) ?? []) backImports.push({ from: a, to: b, edge });
  part.order = order;
}
const pairs = [];
for (const a of names)
  for (const b of names) if (a < b && weight(a, b) > 0 && weight(b, a) > 0) pairs.push([a, b]);

if (args.includes("--summary")) {
  const allowed = max === undefined ? "" : ` (at most ${max} allowed)`;
  console.log(
    `layers: ${backImports.length} back-imports${allowed}, ${pairs.length} pairs of folders importing each other`,
  );
} else if (args.includes("--json")) {
  console.log(
    JSON.stringify(
      {
        folders: Object.fromEntries(names.map((name) => [name, importsOf.get(name)])),
        circles: circles.map((part) => part.order),
        pairs,
        backImports: backImports.map((back) => back.edge),
      },
      null,
      2,
    ),
  );
} else {
  console.log("folders of src/ and the folders each imports (file imports in brackets):");
  for (const name of names) {
    const list = importsOf.get(name).map((other) => `${other} (${weight(name, other)})`);
    console.log(`  ${name.padEnd(11)} -> ${list.join(", ") || "-"}`);
  }
  console.log(`\nfolders importing each other in a circle: ${circles.length === 0 ? "none" : ""}`);
  for (const part of circles) console.log(`  ${part.order.join(" < ")}  (lowest first)`);
  console.log(`\npairs of folders importing each other: ${pairs.length}`);
  for (const [a, b] of pairs) console.log(`  ${a} <-> ${b}  (${weight(a, b)} / ${weight(b, a)})`);
  console.log(`\nback-imports (against the layers): ${backImports.length}`);
  for (const back of backImports) console.log(`  ${back.edge}`);
}
if (max !== undefined && backImports.length > max) {
  console.error(
    `layer-report: ${backImports.length} back-imports, more than the ${max} allowed (\`node scripts/layer-report.mjs\` lists them)`,
  );
  process.exit(1);
}
