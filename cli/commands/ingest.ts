import { Command, Option } from 'commander';
import type { IngestOptions } from '../ingest.js';
import { FORMATS, JSONL_MAPPINGS } from '../usage.js';

export function ingestCommand(): Command {
  return new Command('ingest')
    .description(
      'read articles from files, folders or globs (JATS, MEDLINE/PubMed XML, JSONL, text, Markdown, PDF, .gz) ' +
        'into "articles"; resumes inside a file after a crash and skips files already read',
    )
    .argument('<paths...>', 'files, folders or globs')
    .option('--watch', 'keep watching the one folder given for new, complete files until Ctrl-C')
    .addOption(
      new Option('--format <format>', 'read every file as this format instead of detecting it').choices(
        FORMATS,
      ),
    )
    .addOption(
      new Option('--jsonl-mapping <mapping>', 'how JSONL fields map to an article')
        .choices(JSONL_MAPPINGS)
        .default('auto'),
    )
    .addHelpText(
      'after',
      `
Every reader error (malformed XML, bad encoding, an article with no text...) becomes one record on
"dlq" naming the file, the record and the reason; ingestion goes on.

Examples:
  $ bioalchemy ingest examples/articles
  $ bioalchemy ingest 'downloads/*.xml.gz' --format medline
  $ bioalchemy ingest inbox/ --watch`,
    )
    .action(async (paths: string[], _opts, cmd: Command) =>
      (await import('../ingest.js')).ingest(paths, cmd.optsWithGlobals<IngestOptions>()),
    );
}
