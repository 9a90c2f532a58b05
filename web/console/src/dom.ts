/**
 * Building the page without markup strings: every text goes in as a text node, so nothing an
 * API answer holds (a workspace id, an error message) can become markup or script. Styles are
 * classes from app.css (the Content-Security-Policy forbids style attributes in markup).
 */
export type Child = Node | string | number | null | undefined | false | readonly Child[];

type Props = {
  class?: string;
  on?: { [E in keyof HTMLElementEventMap]?: (event: HTMLElementEventMap[E]) => void };
  [attribute: string]: unknown;
};

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props?: Props | null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props ?? {})) {
    if (name === "on") {
      for (const [event, listener] of Object.entries(value as Record<string, EventListener>))
        element.addEventListener(event, listener);
    } else if (name === "class") element.className = String(value);
    else if (value === true) element.setAttribute(name, "");
    else if (value !== false && value !== undefined && value !== null)
      element.setAttribute(name, String(value));
  }
  append(element, children);
  return element;
}

function append(parent: Node, children: readonly Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(parent, child);
    else if (child instanceof Node) parent.appendChild(child);
    else parent.appendChild(document.createTextNode(String(child)));
  }
}

/** Replaces what `parent` holds with `children`. */
export function replace(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, children);
}

/** A table whose rows scroll sideways on a narrow screen, or `empty` when there are none. */
export function table(headings: readonly string[], rows: readonly Child[][], empty: Child): HTMLElement {
  if (rows.length === 0) return h("p", { class: "empty" }, empty);
  return h(
    "div",
    { class: "table-scroll" },
    h(
      "table",
      null,
      h(
        "thead",
        null,
        h(
          "tr",
          null,
          headings.map((heading) => h("th", { scope: "col" }, heading)),
        ),
      ),
      h(
        "tbody",
        null,
        rows.map((cells) =>
          h(
            "tr",
            null,
            cells.map((cell) => h("td", null, cell)),
          ),
        ),
      ),
    ),
  );
}

/** A message in the page's status area, read out by screen readers. */
export function notice(kind: "error" | "info", ...text: Child[]): HTMLElement {
  return h("p", { class: `notice ${kind}`, role: kind === "error" ? "alert" : "status" }, text);
}

export function button(label: string, onClick: () => void, attributes: Props = {}): HTMLButtonElement {
  return h("button", { type: "button", ...attributes, on: { click: onClick } }, label);
}

/** `2026-12-05T20:10:00Z` as local time, short. */
export function when(iso: string | number | null | undefined): string {
  if (iso === null || iso === undefined) return "-";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? String(iso) : date.toLocaleString();
}

export function bytes(count: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = count;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${unit === 0 ? value : value.toFixed(1)} ${units[unit]}`;
}
