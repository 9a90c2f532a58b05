/** What a page of the console is given: the admin API, where to draw, and what to stop when it is left. */
import type { AdminApi } from "./api.js";

export interface PageContext {
  api: AdminApi;
  /** The page's area; its first heading takes the focus when the page opens. */
  main: HTMLElement;
  /** Runs when the operator leaves the page (timers stopped, charts destroyed). */
  onLeave(cleanup: () => void): void;
  /** Reports a failed call: a token no longer valid signs out, anything else is shown. */
  failed(error: unknown): void;
}

export type Page = (context: PageContext, ...params: string[]) => void | Promise<void>;

/** `#/workspaces/<id>` for a workspace id (ids are letters, digits, `. _ : -`, encoded anyway). */
export const workspaceHref = (workspace: string, tab?: string): string =>
  `#/workspaces/${encodeURIComponent(workspace)}${tab ? `/${tab}` : ""}`;
