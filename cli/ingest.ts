import { addCounts, expandPaths, ingestFile, noCounts, watchFolder } from '../processors/ingest.js';
import { stopOnSignal, withIngestTask } from './context.js';
import { Progress } from './progress.js';
import { type FORMATS, type GlobalOptions, type JSONL_MAPPINGS, UsageError } from './usage.js';

export interface IngestOptions extends GlobalOptions {
  watch?: boolean;
  format?: (typeof FORMATS)[number];
  jsonlMapping?: (typeof JSONL_MAPPINGS)[number];
}

export async function ingest(paths: string[], opts: IngestOptions): Promise<void> {
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
