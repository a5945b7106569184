// Wire timestamps (SPEC §1.2): ISO 8601 date-times with `Z` or a `±hh:mm` offset and 0–9
// fractional-second digits, turned into epoch milliseconds, and the window the worker accepts.

/** A payload more than 7 days old (by the worker's clock) is dropped (SPEC §1.2). */
export const MAX_PAST_MS = 7 * 24 * 60 * 60 * 1000;
/** A payload more than 5 minutes in the future (by the worker's clock) is dropped (SPEC §1.2). */
export const MAX_FUTURE_MS = 5 * 60 * 1000;
/** Longest accepted timestamp text: `YYYY-MM-DDThh:mm:ss.fffffffff+hh:mm` is 35 characters. */
export const MAX_TIMESTAMP_CHARS = 35;

// Uppercase `T` and `Z` only (ISO 8601; RFC 3339's lowercase variants are not accepted), no
// leap second (60), seconds required, exactly one offset form.
const ISO_DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:Z|([+-])(\d{2}):(\d{2}))$/;

const MS_PER_DAY = 86_400_000;

/**
 * Epoch milliseconds of an ISO 8601 date-time, or null. The fraction is parsed by hand (Date keeps
 * only milliseconds) and kept to the microsecond, truncated.
 */
export function parseTimestampMs(text: string): number | null {
  if (text.length > MAX_TIMESTAMP_CHARS) return null;
  const m = ISO_DATE_TIME.exec(text);
  if (m === null) return null;
  const year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  const hour = Number(m[4]);
  const minute = Number(m[5]);
  const second = Number(m[6]);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return null;
  if (hour > 23 || minute > 59 || second > 59) return null;
  let offsetMinutes = 0;
  if (m[8] !== undefined) {
    const offsetHours = Number(m[9]);
    const offsetMins = Number(m[10]);
    if (offsetHours > 23 || offsetMins > 59) return null;
    offsetMinutes = (offsetHours * 60 + offsetMins) * (m[8] === "-" ? -1 : 1);
  }
  const wholeMs =
    daysFromCivil(year, month, day) * MS_PER_DAY +
    ((hour * 60 + minute - offsetMinutes) * 60 + second) * 1000;
  const fraction = m[7];
  if (fraction === undefined) return wholeMs;
  // Microseconds past the second: the first 6 digits, right-padded ("5" → 500000).
  const micros = Number((fraction + "00000").slice(0, 6));
  return wholeMs + micros / 1000;
}

/** Formats epoch milliseconds as the wire writes them (UTC, milliseconds). For producers and tests. */
export function formatTimestamp(epochMs: number): string {
  return new Date(epochMs).toISOString();
}

/**
 * Why a timestamp falls outside the accepted window, or null when it is inside. Exactly 7 days
 * old and exactly 5 minutes ahead are still accepted ("more than" drops, SPEC §1.2).
 */
export function timeWindowProblem(epochMs: number, nowMs: number): string | null {
  if (epochMs < nowMs - MAX_PAST_MS) return "more than 7 days old";
  if (epochMs > nowMs + MAX_FUTURE_MS) return "more than 5 minutes in the future";
  return null;
}

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return isLeapYear(year) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}
