/** A refused request: the HTTP status and the reason; nothing in the feeder changed. */
export class FeederError extends Error {
  constructor(
    readonly status: 400 | 404 | 409 | 413 | 503,
    readonly code: string,
    reason: string,
  ) {
    super(reason);
  }
}
