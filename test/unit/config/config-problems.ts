/** The problems a ConfigError lists, from an action that must throw one. */
import { ConfigError } from "../../../src/config/load-config.js";

export function problemsOf(action: () => unknown): readonly string[] {
  try {
    action();
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error("expected a ConfigError");
}
