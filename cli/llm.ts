import { existsSync } from 'node:fs';
import { ENDPOINTS_TOPIC, EndpointMemory, Llm, type LlmOptions } from '../llm/index.js';
import type { Config } from '../schemas/config.js';
import { configOf, openLog } from './context.js';
import type { GlobalOptions } from './usage.js';

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

export interface LlmForgetOptions extends GlobalOptions {
  endpoint?: string;
}

/** `bioalchemy llm forget`: what was learned of the endpoints, forgotten: the next start learns afresh. */
export async function llmForget(opts: LlmForgetOptions): Promise<void> {
  const runtime = await openLog(configOf(opts));
  try {
    await runtime.ensureTopics([ENDPOINTS_TOPIC]);
    const forgotten = await EndpointMemory.forget(runtime, opts.endpoint);
    process.stdout.write(
      `forgot ${forgotten} facts${opts.endpoint ? ` of ${opts.endpoint}` : ''}: the next run learns them afresh\n`,
    );
  } finally {
    await runtime.close();
  }
}
