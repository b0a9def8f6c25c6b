import { basename } from 'node:path';
import { type LlmConfig, type LlmProvider, LlmStage } from '../schemas/llm.js';
import type { Clock } from './clock.js';
import type { EndpointMemory } from './endpoint-memory.js';
import { type ConcurrencyState, Endpoint, type EndpointHooks } from './flow/endpoint.js';
import type { EndpointFault } from './flow/faults.js';
import { Throttle } from './flow/throttle.js';
import { LocalProvider } from './providers/local.js';
import { OpenAiProvider } from './providers/openai.js';
import type { Provider } from './providers/provider.js';

/** Where a stage's requests go and with what settings: the global block under the stage's overrides. */
export interface Target {
  provider: LlmProvider;
  model: string;
  /** The stage names its own model (llm.stages.<stage>.model): the key an unknown model is fixed in. */
  stageModel: boolean;
  /** null: not sent. */
  temperature: number | null;
  maxTokens: number;
  /** The most a reply cut off while thinking is given when asked again. */
  maxTokensCap: number;
  /** The model's context, where declared. */
  contextTokens: number | undefined;
  /** Server-specific fields for each request: the global ones under the stage's. */
  fields: Record<string, unknown>;
  timeoutMs: number;
  /** Streaming and its progress timeouts; undefined: whole replies. */
  stream: { firstChunkMs: number; stallMs: number } | undefined;
  inputUsdPerMillion: number;
  outputUsdPerMillion: number;
  backend: Provider;
  endpoint: Endpoint;
  /** The stage's own limits, inside its endpoint's. */
  throttle: Throttle;
}

/**
 * One Target per stage, sharing an Endpoint (and its flow control) between the stages that use the
 * same base URL or model file. Built up front, so that a bad config (a missing API key) fails at
 * start, not at the first call.
 */
export class Targets {
  private readonly stages = new Map<LlmStage, Target>();
  private readonly endpoints = new Map<string, { endpoint: Endpoint; backend: Provider }>();

  constructor(
    private readonly config: LlmConfig,
    /** What earlier runs learned of the endpoints, and where this one's goes. */
    private readonly memory: EndpointMemory,
    private readonly clock: Clock,
    private readonly hooks: (endpoint: string) => EndpointHooks,
    private readonly env: NodeJS.ProcessEnv,
    /** Told when an endpoint refused a field sent by choice and is sent requests without it from now on. */
    private readonly onDialect: (
      endpoint: string,
      model: string,
      change: string,
      refusal: string,
    ) => void = () => {},
  ) {
    for (const stage of LlmStage.options) this.stages.set(stage, this.build(stage));
  }

  get(stage: LlmStage): Target {
    return this.stages.get(stage)!;
  }

  /** Where the adaptive limit of each endpoint's models stands. */
  concurrency(): ConcurrencyState[] {
    return [...this.endpoints.values()].flatMap(({ endpoint }) => endpoint.concurrency());
  }

  /** The confirmed faults of the endpoints, each endpoint's once. */
  faults(): EndpointFault[] {
    return [...this.endpoints.values()].flatMap(({ endpoint }) => endpoint.confirmedFaults());
  }

  async close(): Promise<void> {
    await Promise.all([...this.endpoints.values()].map(({ backend }) => backend.close()));
  }

  private build(stage: LlmStage): Target {
    const c = this.config;
    const s = c.stages[stage] ?? {};
    const provider = s.provider ?? c.provider ?? (c.baseUrl ? 'openai' : 'local');
    const name = provider === 'local' ? `local:${basename(c.modelPath)}` : endpointName(c.baseUrl);
    let shared = this.endpoints.get(name);
    if (!shared) {
      const backend: Provider =
        provider === 'local' ? new LocalProvider({ modelPath: c.modelPath }) : this.openai(name);
      shared = {
        backend,
        endpoint: new Endpoint(
          name,
          {
            limits: c,
            retry: c.retry,
            circuit: c.circuit,
            statedCapacity: () => backend.statedCapacity(),
            learned: (model) => this.memory.get(name, model),
          },
          this.clock,
          this.hooks(name),
        ),
      };
      this.endpoints.set(name, shared);
    }
    return {
      provider,
      model: s.model ?? (provider === 'local' ? basename(c.modelPath) : c.model),
      stageModel: s.model !== undefined,
      // A stage's null (not sent) stands over the global temperature; only an absent one does not.
      temperature: s.temperature !== undefined ? s.temperature : c.temperature,
      maxTokens: s.maxTokens ?? c.maxTokens,
      maxTokensCap: Math.max(c.maxTokensCap, s.maxTokens ?? c.maxTokens),
      contextTokens: s.contextTokens ?? c.contextTokens,
      fields: { ...c.requestFields, ...s.requestFields },
      timeoutMs: c.timeoutMs,
      stream: c.stream ? { firstChunkMs: c.firstTokenTimeoutMs, stallMs: c.stallTimeoutMs } : undefined,
      inputUsdPerMillion: s.inputUsdPerMillion ?? c.inputUsdPerMillion,
      outputUsdPerMillion: s.outputUsdPerMillion ?? c.outputUsdPerMillion,
      ...shared,
      throttle: new Throttle(s, this.clock),
    };
  }

  private openai(endpoint: string): Provider {
    const key = this.env[this.config.apiKeyEnv];
    if (!key)
      throw new Error(`the LLM endpoint's API key: environment variable ${this.config.apiKeyEnv} is not set`);
    return new OpenAiProvider(this.config.baseUrl, key, {
      onDialect: (model, change, refusal) => this.onDialect(endpoint, model, change, refusal),
      dialects: {
        get: (model) => this.memory.get(endpoint, model).dialect,
        set: (model, dialect) => this.memory.learn(endpoint, model, { dialect }),
      },
    });
  }
}

/** An endpoint's name for logs and metrics: its URL without credentials. */
function endpointName(baseUrl: string | undefined): string {
  if (!baseUrl) return 'https://api.openai.com/v1';
  const url = new URL(baseUrl);
  url.username = '';
  url.password = '';
  url.search = '';
  return url.toString();
}
