/**
 * Structured logs (pino) on stderr, so stdout stays free for what a command prints for
 * people and scripts. Level from SANDPOOL_LOG_LEVEL (default info).
 */
import { type Logger, pino } from "pino";

export function createLogger(name: string, level = process.env.SANDPOOL_LOG_LEVEL ?? "info"): Logger {
  return pino({ name, level, base: { pid: process.pid } }, pino.destination({ fd: 2, sync: false }));
}
