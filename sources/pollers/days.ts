/**
 * Day windows in UTC. Pollers only read days that are over (plus a settling lag), because a
 * finished day's result set no longer grows: paging through it cannot skip or repeat an article,
 * and re-polling when caught up asks for nothing new instead of re-reading a growing day.
 */

const DAY_MS = 86_400_000;

export function addDays(day: string, n: number): string {
  return new Date(Date.parse(`${day}T00:00:00Z`) + n * DAY_MS).toISOString().slice(0, 10);
}

/**
 * The last day that may be read at `now`: yesterday, minus `lagDays` more so that records filed
 * late under a day's date (E-utilities dates are US Eastern, Europe PMC indexes overnight) have
 * landed before the day is read once and for all.
 */
export function lastClosedDay(now: Date, lagDays: number): string {
  return addDays(now.toISOString().slice(0, 10), -1 - lagDays);
}

export const isClosed = (day: string, now: Date, lagDays: number) => day <= lastClosedDay(now, lagDays);
