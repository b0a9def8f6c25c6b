import { z } from 'zod';
import { BiorxivConfig, createBiorxivPoller } from './biorxiv.js';
import type { PollerDeps } from './common.js';
import { createEuropePmcPoller, EuropePmcConfig } from './europepmc.js';
import { createPubmedPoller, PubmedConfig } from './pubmed.js';
import type { Poller } from './types.js';

/** One poller in the config file. Secrets are not config: the NCBI key comes from env NCBI_API_KEY. */
export const PollerConfig = z.discriminatedUnion('kind', [PubmedConfig, EuropePmcConfig, BiorxivConfig]);
export type PollerConfig = z.infer<typeof PollerConfig>;
export type PollerConfigInput = z.input<typeof PollerConfig>;

export function createPoller(config: PollerConfigInput, deps: PollerDeps & { apiKey?: string } = {}): Poller {
  const parsed = PollerConfig.parse(config);
  switch (parsed.kind) {
    case 'pubmed':
      return createPubmedPoller({ ...parsed, ...deps });
    case 'europepmc':
      return createEuropePmcPoller({ ...parsed, ...deps });
    case 'biorxiv':
      return createBiorxivPoller({ ...parsed, ...deps });
  }
}
