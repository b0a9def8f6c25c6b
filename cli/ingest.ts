import { Command, Option } from 'commander';
import { addCounts, expandPaths, ingestFile, noCounts, watchFolder } from '../processors/ingest.js';
import { type GlobalOptions, stopOnSignal, UsageError, withIngestTask } from './context.js';
import { Progress } from './progress.js';

const FORMATS = ['jats', 'medline', 'jsonl', 'text', 'markdown', 'pdf'] as const;
const JSONL_MAPPINGS = ['auto', 's2orc', 'generic'] as const;

interface IngestOptions extends GlobalOptions {
  watch?: boolean;
  format?: (typeof FORMATS)[number];
  jsonlMapping?: (typeof JSONL_MAPPINGS)[number];
}

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
  $ bioalchemy ingest ../shared/corpus/jats ../shared/corpus/medline
  $ bioalchemy ingest 'downloads/*.xml.gz' --format medline
  $ bioalchemy ingest inbox/ --watch`,
    )
    .action((paths: string[], _opts, cmd: Command) => ingest(paths, cmd.optsWithGlobals<IngestOptions>()));
}

async function ingest(paths: string[], opts: IngestOptions): Promise<void> {
  const read = {
    ...(opts.format ? { format: opts.format } : {}),
    ...(opts.jsonlMapping ? { jsonl: opts.jsonlMapping } : {}),
  };
  if (opts.watch && paths.length !== 1) throw new UsageError('--watch takes one folder');
  const signal = stopOnSignal();
  const totals = noCounts();
  await withIngestTask(opts, async (task, log) => {
    if (opts.watch) {
      log.info({ folder: paths[0] }, 'watching');
      await watchFolder(task, paths[0]!, {
        signal,
        read,
        onFile: (path, counts) => {
          addCounts(totals, counts);
          log.info({ path, ...counts }, 'ingested');
        },
      });
      return;
    }
    const files = await expandPaths(paths);
    const progress = new Progress('ingest', files.length, 'files');
    let unchanged = 0;
    for (const file of files) {
      if (signal.aborted) break;
      const { status, counts } = await ingestFile(task, file, { read, onItems: (n) => progress.items(n) });
      if (status === 'unchanged') unchanged++;
      addCounts(totals, counts);
      progress.tick();
    }
    progress.done();
    process.stderr.write(
      `ingested ${files.length - unchanged} file(s) (${unchanged} unchanged since last time): ` +
        `${totals.articles} new article(s), ${totals.updated} updated by another source, ` +
        `${totals.duplicates} duplicate(s), ${totals.deadLetters} dead letter(s)\n`,
    );
  });
}
