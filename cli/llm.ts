import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { EndpointMemory } from '../llm/endpoint-memory.js';
import { Llm, type LlmOptions } from '../llm/index.js';
import type { Config } from '../schemas/config.js';

/** With no endpoint configured, the local model: it must be there, or nothing could run. */
export function openLlm(config: Config, options: LlmOptions): Llm {
  const provider = config.llm.provider ?? (config.llm.baseUrl ? 'openai' : 'local');
  if (provider === 'local' && !existsSync(config.llm.modelPath))
    throw new Error(
      `no LLM: the local model ${config.llm.modelPath} is missing (run "bioalchemy model pull"), ` +
        'or set llm.baseUrl in the config to an OpenAI-compatible endpoint',
    );
  return new Llm(config.llm, options);
}

/**
 * Where what is learned of the endpoints is kept: beside the embedded log, in its data folder, so
 * that a restart starts from it. A Kafka deployment has no data folder of its own: its workers
 * learn again at start (a refused request or two each).
 */
export function endpointMemoryOf(config: Config): EndpointMemory | undefined {
  if (!config.log.startsWith('file:')) return undefined;
  return EndpointMemory.open(join(config.log.slice('file:'.length) || './data', 'llm-endpoints.json'));
}
