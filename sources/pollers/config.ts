import { PollerConfig, type PollerConfigInput } from '../../schemas/pollers.js';
import { createBiorxivPoller } from './biorxiv.js';
import type { PollerDeps } from './common.js';
import { createEuropePmcPoller } from './europepmc.js';
import { createPubmedPoller } from './pubmed.js';
import type { Poller } from './types.js';

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
