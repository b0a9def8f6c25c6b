/** Literature pollers: pages of new articles from PubMed, Europe PMC and bioRxiv behind a persisted cursor. */
export { apiDeadLetter } from './api-items.js';
export { BIORXIV_PROCESSOR, type BiorxivOptions, createBiorxivPoller } from './biorxiv.js';
export type { PollerDeps } from './common.js';
export { createPoller } from './config.js';
export { addDays, lastClosedDay } from './days.js';
export {
  createEuropePmcPoller,
  EUROPEPMC_PROCESSOR,
  type EuropePmcOptions,
} from './europepmc.js';
export { HttpError, PoliteHttp } from './http.js';
export { createPubmedPoller, PUBMED_PROCESSOR, type PubmedOptions } from './pubmed.js';
export { HostRateLimiter, sharedRateLimiter } from './rate-limit.js';
export type { Poller, PollerLog, PollPage } from './types.js';
