import { Command } from 'commander';
import type { LlmForgetOptions } from '../llm.js';
import type { LlmCheckOptions } from '../llm-check.js';

const list = (value: string, previous: string[] = []) => [...previous, ...value.split(',').filter(Boolean)];

export function llmCommand(): Command {
  const llm = new Command('llm').description('the LLM endpoint the stages use (llm.* in the config)');
  llm
    .command('check')
    .description(
      "send each stage's request once and say what the endpoint accepts: auth, model, structured output, " +
        'thinking, parameters refused, context; exits 1 with the fix when a stage cannot run',
    )
    .option('--stage <stages>', 'only these stages (comma-separated, repeatable)', list)
    .addHelpText(
      'after',
      `
Each stage's request is its real prompt and reply schema on a short sample passage, sent once
(no response journal: it is paid). A wrong key, an unknown model, a missing route or a request the
server refuses names the config key to fix and quotes the server.

Examples:
  $ bioalchemy llm check
  $ bioalchemy llm check --stage relevance,classify --config prod.json`,
    )
    .action(async (_opts, cmd: Command) =>
      (await import('../llm-check.js')).llmCheck(cmd.optsWithGlobals<LlmCheckOptions>()),
    );
  llm
    .command('forget')
    .description(
      'forget what was learned of the endpoints (refused fields, context, thinking budget, concurrency, ' +
        'kept on the log in llm.endpoints): the next run learns them afresh, after a server changes',
    )
    .option('--endpoint <url>', "only this endpoint's facts: its base URL, as the run summary names it")
    .addHelpText(
      'after',
      `
Examples:
  $ bioalchemy llm forget
  $ bioalchemy llm forget --endpoint http://127.0.0.1:8000/v1 --config prod.json`,
    )
    .action(async (_opts, cmd: Command) =>
      (await import('../llm.js')).llmForget(cmd.optsWithGlobals<LlmForgetOptions>()),
    );
  return llm;
}
