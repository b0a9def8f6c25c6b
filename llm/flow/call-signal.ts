/**
 * One call's own abort signal, aborted when the long-lived `stop` signal aborts.
 *
 * Why not hand `stop` itself to the call: libraries add a listener per request to the signal they
 * are given and never remove it (the openai client does), and each add walks the signal's whole
 * list (Node's EventTarget looks for a duplicate). On a signal that lives as long as the process,
 * every call then costs more than the last. A call's own signal dies with the call, whatever was
 * added to it; `stop` holds one listener per call in flight, removed by `release()` when it settles.
 */
export interface CallSignal {
  readonly signal: AbortSignal;
  /** Unties the call from `stop`: call it once the call has settled, whichever way. */
  release(): void;
}

export function callSignal(stop: AbortSignal): CallSignal {
  const call = new AbortController();
  if (stop.aborted) {
    call.abort(stop.reason);
    return { signal: call.signal, release: () => {} };
  }
  const abort = () => call.abort(stop.reason);
  stop.addEventListener('abort', abort, { once: true });
  return { signal: call.signal, release: () => stop.removeEventListener('abort', abort) };
}
