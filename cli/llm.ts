import { existsSync } from 'node:fs';
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
