import { checkStages } from '../llm/check.js';
import { LlmStage } from '../schemas/llm.js';
import { loadTaxonomy } from '../schemas/taxonomy.js';
import { configOf } from './context.js';
import { openLlm } from './llm.js';
import { ExitStatus, type GlobalOptions, UsageError } from './usage.js';

export interface LlmCheckOptions extends GlobalOptions {
  stage?: string[];
}

/** `bioalchemy llm check`: each stage's request once, what the endpoint made of it, and the fix. */
export async function llmCheck(opts: LlmCheckOptions): Promise<void> {
  const config = configOf(opts);
  const stages = (opts.stage ?? []).map((s) => {
    const parsed = LlmStage.safeParse(s);
    if (!parsed.success)
      throw new UsageError(`--stage: unknown stage "${s}" (one of: ${LlmStage.options.join(', ')})`);
    return parsed.data;
  });
  // The same refusals as run: a local model that is not there, an API key variable not set.
  await openLlm(config, {}).close();
  const checks = await checkStages(config.llm, {
    taxonomy: loadTaxonomy(config.taxonomy),
    accept: config.grade.accept,
    stages,
    ...(config.reward.verifier ? { verifier: config.reward.verifier.prompt } : {}),
  });
  const endpoint = config.llm.baseUrl ?? `local model ${config.llm.modelPath}`;
  const lines = [`LLM endpoint ${endpoint}:`];
  for (const c of checks) {
    lines.push(
      `  ${c.stage.padEnd(14)} ${c.ok ? 'ok  ' : 'FAIL'} model ${c.model} (${c.seconds.toFixed(1)} s)`,
    );
    for (const f of c.findings) lines.push(`      ${f}`);
    if (c.fault)
      lines.push(`      the server said${c.fault.status ? ` (${c.fault.status})` : ''}: ${c.fault.message}`);
  }
  process.stdout.write(`${lines.join('\n')}\n`);
  const failed = checks.filter((c) => !c.ok);
  if (failed.length)
    throw new ExitStatus(
      `${failed.length} stage(s) cannot run: ${failed.map((c) => `${c.stage}${c.fault ? ` (fix ${c.fault.configKey})` : ''}`).join(', ')}`,
      1,
    );
}
