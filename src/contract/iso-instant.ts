/**
 * The instants the admin API (`from`, `to`, `since`, `until`) and the CLI (`--since`,
 * `--until`) accept: a date (YYYY-MM-DD, the start of that UTC day) or a date-time with `Z` or
 * an offset. A date-time without a zone is refused: `new Date()` would read it in the local
 * time of whichever machine parses it, so the same query would mean different hours on the
 * operator's laptop and on the gateway.
 */
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?$/i;

export type InstantParse = { ok: true; date: Date } | { ok: false; reason: string };

/** A real calendar day: `new Date` would roll 2026-02-30 over to March 2nd. */
function isCalendarDay(year: string, month: string, day: string): boolean {
  const date = new Date(Date.UTC(Number(year), Number(month) - 1, Number(day)));
  return date.getUTCMonth() === Number(month) - 1 && date.getUTCDate() === Number(day);
}

export function parseIsoInstant(value: string): InstantParse {
  const bad = (reason: string): InstantParse => ({ ok: false, reason });
  const dateOnly = DATE.exec(value);
  const dateTime = dateOnly ? undefined : DATE_TIME.exec(value);
  const parts = dateOnly ?? dateTime;
  if (!parts)
    return bad(`expected a date (YYYY-MM-DD, UTC) or a date-time with Z or an offset, got '${value}'`);
  if (!isCalendarDay(parts[1]!, parts[2]!, parts[3]!)) return bad(`'${value}' is not a calendar date`);
  if (dateTime && dateTime[7] === undefined)
    return bad(`'${value}' has no time zone: add Z (UTC) or an offset such as +01:00`);
  // V8 reads a space separator and a +hhmm offset too, but say it the standard way.
  const normalised = dateOnly
    ? `${value}T00:00:00Z`
    : value.replace(" ", "T").replace(/([+-]\d{2})(\d{2})$/, "$1:$2");
  const date = new Date(normalised);
  if (Number.isNaN(date.getTime())) return bad(`'${value}' is not a valid date-time`);
  return { ok: true, date };
}
