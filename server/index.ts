import { dirname, join } from 'node:path';
import type { Logger } from 'pino';
import { Registry } from 'prom-client';
import type { Analytics } from '../analytics/clickhouse.js';
import { Llm } from '../llm/index.js';
import { Feeder } from '../processors/feeder/feeder.js';
import { feederProcessor } from '../processors/feeder/processor.js';
import { RewardVerifier } from '../processors/reward-verifier.js';
import { VerifierJournal, verifierJournalGauges } from '../processors/verifier-journal.js';
import type { Config } from '../schemas/config.js';
import type { Processor } from '../topology/processor.js';
import { startServer } from './feeder-api.js';

/**
 * The feeder's file: the config's feeder.state, else feeder.sqlite beside the embedded log, else
 * (on Kafka) ./data/feeder-<app>.sqlite, so two apps on one cluster never share a pool.
 */
export function feederPath(config: Pick<Config, 'log' | 'feeder' | 'app'>): string {
  if (config.feeder.state) return config.feeder.state;
  if (config.log.startsWith('file:')) return join(config.log.slice('file:'.length), 'feeder.sqlite');
  return join('./data', `feeder-${config.app}.sqlite`);
}

export interface Feeding {
  /** The feeder processor for the topology; it shares the Feeder with the HTTP handlers. */
  readonly processor: Processor;
  /** The Feeder itself (the dashboard reads its runs and ranks). */
  readonly feeder: Feeder;
  /** Where the API listens; null when not served. */
  readonly url: string | null;
  close(): Promise<void>;
}

/**
 * Opens the feeder's file and, when `serve`, its HTTP API (config.server: 127.0.0.1:8787 by
 * default). One Feeder object serves both the processor and the handlers.
 */
export async function startFeeding(
  config: Pick<Config, 'log' | 'feeder' | 'server' | 'app'> & Partial<Pick<Config, 'llm' | 'reward'>>,
  opts: {
    analytics?: Analytics;
    log: Logger;
    serve: boolean;
    host?: string;
    port?: number;
    env?: NodeJS.ProcessEnv;
    /** Where the API's request latency and event-loop delay histograms go. */
    registry?: Registry;
  },
): Promise<Feeding> {
  const token = (opts.env ?? process.env)[config.server.tokenEnv] || undefined;
  const listen = {
    ...config.server,
    ...(opts.host ? { host: opts.host } : {}),
    ...(token === undefined ? {} : { token }),
  };
  if (opts.port !== undefined) listen.port = opts.port;
  const feeder = Feeder.open(feederPath(config), config.feeder);
  const processor = feederProcessor({ feeder, ...(opts.analytics ? { analytics: opts.analytics } : {}) });
  // reward.verifier (opt-in): a layer of its own for stage `verify`, journaled on disk beside the
  // feeder's file, so a restarted feeder answers a replayed rollout without paying again. Its LLM
  // metrics stay in a registry of its own (the pipeline's layer registers the same names); the
  // verifier's decisions, fallbacks and cache hits go to the feeder's.
  const verifierConfig = config.reward?.verifier;
  let journal: VerifierJournal | null = null;
  let llm: Llm | null = null;
  let verifier: RewardVerifier | undefined;
  if (opts.serve && verifierConfig && config.llm) {
    journal = new VerifierJournal(
      verifierConfig.journal ?? join(dirname(feederPath(config)), 'verifier.sqlite'),
      verifierConfig.journalEntries,
    );
    if (opts.registry) verifierJournalGauges(opts.registry, journal);
    llm = new Llm(config.llm, {
      journal,
      registry: new Registry(),
      log: opts.log.child({ stage: 'verify' }),
      ...(opts.env ? { env: opts.env } : {}),
    });
    verifier = new RewardVerifier({
      llm,
      config: verifierConfig,
      ...(opts.registry ? { registry: opts.registry } : {}),
    });
    opts.log.info(
      { prompt: verifierConfig.prompt, deadlineMs: verifierConfig.deadlineMs },
      'reward verifier on',
    );
  }
  let server: Awaited<ReturnType<typeof startServer>> | null = null;
  try {
    if (opts.serve)
      server = await startServer(feeder, { ...listen, ...(verifier ? { verifier } : {}) }, opts.registry);
  } catch (e) {
    feeder.close();
    await llm?.close();
    journal?.close();
    throw e;
  }
  if (server) opts.log.info({ url: server.url, openapi: `${server.url}/openapi.json` }, 'feeder API');
  return {
    processor,
    feeder,
    url: server?.url ?? null,
    async close() {
      await server?.close();
      feeder.close();
      await llm?.close();
      journal?.close();
    },
  };
}
