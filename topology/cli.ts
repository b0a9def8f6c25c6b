import { createReadStream } from 'node:fs';
import { createServer } from 'node:http';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import type { Logger } from 'pino';
import {
  addCounts,
  expandPaths,
  ingestFile,
  ingestProcessor,
  noCounts,
  watchFolder,
} from '../processors/ingest.js';
import { configuredPollers, pollAll } from '../processors/poll.js';
import { type Config, exportJsonSchemas, loadConfig } from '../schemas/index.js';
import { TopicCodecs } from './codec.js';
import { createLogger } from './log.js';
import { EngineMetrics } from './metrics.js';
import { pipelineTopology } from './pipeline.js';
import { Progress } from './progress.js';
import { runTopology } from './runner.js';
import { openRuntime } from './runtime/open.js';
import { ProcessorTask } from './task.js';
import { describeTopology, topicOf } from './topology.js';

/** A mistake of the user's: printed as one line, exit status 2, no stack trace. */
export class UsageError extends Error {}

const USAGE = `usage: bioalchemy <command> [options]

commands:
  run                       run the pipeline until Ctrl-C
  topology describe         print topics, sources and processors
  schemas export DIR        write one JSON Schema per record
  ingest PATH...            read articles from files, folders or globs (JATS, MEDLINE, JSONL,
                            text, Markdown, PDF, .gz) into "articles"; --watch keeps a folder watched
  poll [--once]             run the literature pollers of the config ("sources": PubMed, Europe PMC,
                            bioRxiv) until Ctrl-C, or until caught up with --once
  produce TOPIC [--file F]  validate JSON lines (stdin or F) and append them to TOPIC
  consume TOPIC             print records of TOPIC as JSON lines

options:
  --config FILE      config file (JSON); see schemas/config.ts
  --data DIR         embedded log directory (same as log "file:DIR"), default ./data
  --metrics-port N   (run) serve Prometheus metrics on 127.0.0.1:N
  --watch            (ingest) keep watching the folder for new, complete files until Ctrl-C
  --format F         (ingest) jats, medline, jsonl, text, markdown or pdf instead of detecting
  --jsonl-mapping M  (ingest) auto, s2orc or generic
  --once             (poll) stop once every poller is caught up
  --key FIELD        (produce) take each record's key from this field of the value
  --limit N          (consume) stop after N records
  --follow           (consume) keep waiting for new records
  --with-meta        (consume) print partition, offset and key around each value`;

const OPTIONS = {
  config: { type: 'string' },
  data: { type: 'string' },
  'metrics-port': { type: 'string' },
  file: { type: 'string' },
  key: { type: 'string' },
  limit: { type: 'string' },
  follow: { type: 'boolean' },
  watch: { type: 'boolean' },
  once: { type: 'boolean' },
  format: { type: 'string' },
  'jsonl-mapping': { type: 'string' },
  'with-meta': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Flags = ReturnType<typeof parse>['values'];

function parse(argv: string[]) {
  try {
    return parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (e) {
    throw new UsageError((e as Error).message.split('\n')[0]!);
  }
}

function configOf(flags: Flags): Config {
  const config = loadConfig(flags.config ?? process.env.BIOALCHEMY_CONFIG);
  return flags.data ? { ...config, log: `file:${flags.data}` } : config;
}

function intFlag(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) throw new UsageError(`--${name} expects a whole number, got "${value}"`);
  return Number(value);
}

export async function main(argv: string[]): Promise<number> {
  try {
    const { values: flags, positionals } = parse(argv);
    const [command, ...rest] = positionals;
    if (flags.help || !command) {
      process.stdout.write(`${USAGE}\n`);
      return command || flags.help ? 0 : 2;
    }
    switch (command) {
      case 'run':
        return await run(flags);
      case 'topology':
        if (rest[0] !== 'describe') throw new UsageError('expected "topology describe"');
        process.stdout.write(`${describeTopology(pipelineTopology())}\n`);
        return 0;
      case 'schemas': {
        if (rest[0] !== 'export' || !rest[1]) throw new UsageError('expected "schemas export DIR"');
        for (const file of exportJsonSchemas(rest[1])) process.stdout.write(`${file}\n`);
        return 0;
      }
      case 'ingest':
        return await ingest(flags, rest);
      case 'poll':
        return await poll(flags);
      case 'produce':
        return await produce(flags, rest[0]);
      case 'consume':
        return await consume(flags, rest[0]);
      default:
        throw new UsageError(`unknown command "${command}" (try --help)`);
    }
  } catch (e) {
    process.stderr.write(`bioalchemy: ${(e as Error).message}\n`);
    return e instanceof UsageError ? 2 : 1;
  }
}

async function run(flags: Flags): Promise<number> {
  const config = configOf(flags);
  const log = createLogger();
  const metrics = new EngineMetrics({ defaults: true });
  const port = intFlag(flags['metrics-port'], 'metrics-port') ?? config.metricsPort;
  const runtime = await openRuntime(config.log);
  const stop = new AbortController();
  const onSignal = (signal: string) => {
    log.info({ signal }, 'stopping after the current step');
    stop.abort();
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const server =
    port === undefined
      ? null
      : createServer(async (req, res) => {
          if (req.url !== '/metrics') return void res.writeHead(404).end();
          res
            .writeHead(200, { 'content-type': metrics.registry.contentType })
            .end(await metrics.registry.metrics());
        });
  if (server) {
    await new Promise<void>((resolve, reject) =>
      server.once('error', reject).listen(port, '127.0.0.1', resolve),
    );
    log.info({ port }, 'metrics on /metrics');
  }
  try {
    const topology = pipelineTopology();
    await runtime.ensureTopics(topology.topics);
    // Pollers feed "articles" through their own ingest task, next to the processors.
    const polling = config.sources.length
      ? new ProcessorTask(runtime, topology, ingestProcessor, {
          log: log.child({ processor: 'ingest' }),
          metrics,
        })
          .open()
          .then(async (task) => {
            await pollAll(task, configuredPollers(config.sources, log), { signal: stop.signal, log }).finally(
              () => task.close(),
            );
          })
      : Promise.resolve();
    await Promise.all([
      runTopology(runtime, topology, {
        log,
        metrics,
        signal: stop.signal,
        batchSize: (p) => config.processors[p]?.batchSize,
        commitIntervalMs: (p) => config.processors[p]?.commitIntervalMs,
      }),
      polling,
    ]);
  } finally {
    server?.close();
    await runtime.close();
  }
  log.info('stopped');
  return 0;
}

const FORMATS = ['jats', 'medline', 'jsonl', 'text', 'markdown', 'pdf'] as const;
const JSONL_MAPPINGS = ['auto', 's2orc', 'generic'] as const;

function oneOf<T extends string>(
  value: string | undefined,
  allowed: readonly T[],
  name: string,
): T | undefined {
  if (value === undefined) return undefined;
  if (!allowed.includes(value as T))
    throw new UsageError(`--${name} must be one of ${allowed.join(', ')}, got "${value}"`);
  return value as T;
}

/** Runs body with an open ingest task on the configured runtime, closing both after. */
async function withIngestTask<T>(
  flags: Flags,
  body: (task: ProcessorTask, log: Logger) => Promise<T>,
): Promise<T> {
  const log = createLogger();
  const topology = pipelineTopology();
  const runtime = await openRuntime(configOf(flags).log);
  try {
    await runtime.ensureTopics(topology.topics);
    const task = await new ProcessorTask(runtime, topology, ingestProcessor, {
      log: log.child({ processor: 'ingest' }),
      metrics: new EngineMetrics(),
    }).open();
    try {
      return await body(task, log);
    } finally {
      await task.close();
    }
  } finally {
    await runtime.close();
  }
}

function stopOnSigint(): AbortSignal {
  const stop = new AbortController();
  process.once('SIGINT', () => stop.abort());
  process.once('SIGTERM', () => stop.abort());
  return stop.signal;
}

async function poll(flags: Flags): Promise<number> {
  const config = configOf(flags);
  if (config.sources.length === 0)
    throw new UsageError('no pollers: add "sources" to the config file (see schemas/config.ts)');
  const signal = stopOnSigint();
  const totals = await withIngestTask(flags, (task, log) =>
    pollAll(task, configuredPollers(config.sources, log), { signal, log, once: flags.once ?? false }),
  );
  process.stderr.write(
    `polled: ${totals.articles} new article(s), ${totals.updated} updated, ${totals.duplicates} duplicate(s), ${totals.deadLetters} dead letter(s)\n`,
  );
  return 0;
}

async function ingest(flags: Flags, paths: string[]): Promise<number> {
  if (paths.length === 0) throw new UsageError('expected "ingest PATH..." (files, folders or globs)');
  const format = oneOf(flags.format, FORMATS, 'format');
  const jsonl = oneOf(flags['jsonl-mapping'], JSONL_MAPPINGS, 'jsonl-mapping');
  const read = { ...(format ? { format } : {}), ...(jsonl ? { jsonl } : {}) };
  if (flags.watch && paths.length !== 1) throw new UsageError('--watch takes one folder');
  const signal = stopOnSigint();
  const totals = noCounts();
  await withIngestTask(flags, async (task, log) => {
    if (flags.watch) {
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
  return 0;
}

async function produce(flags: Flags, topic: string | undefined): Promise<number> {
  if (!topic) throw new UsageError('expected "produce TOPIC"');
  const topology = pipelineTopology();
  topicOf(topology, topic);
  const codecs = new TopicCodecs(topology);
  const input = flags.file ? createReadStream(flags.file) : process.stdin;
  const records = [];
  let line = 0;
  for await (const text of createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY })) {
    line++;
    if (!text.trim()) continue;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (e) {
      throw new UsageError(`line ${line}: not JSON: ${(e as Error).message}`);
    }
    let encoded: string;
    try {
      encoded = codecs.encode(topic, value);
    } catch (e) {
      throw new UsageError(`line ${line}: ${(e as Error).message}`);
    }
    const key = flags.key ? (value as Record<string, unknown>)?.[flags.key] : undefined;
    records.push({ topic, key: key == null ? null : String(key), value: encoded });
  }
  // All or nothing: one bad line refuses the whole input, so a fixed file can simply be sent again.
  const runtime = await openRuntime(configOf(flags).log);
  try {
    await runtime.ensureTopics(topology.topics);
    await runtime.append(records);
  } finally {
    await runtime.close();
  }
  process.stderr.write(`produced ${records.length} record(s) to ${topic}\n`);
  return 0;
}

async function consume(flags: Flags, topic: string | undefined): Promise<number> {
  if (!topic) throw new UsageError('expected "consume TOPIC"');
  const topology = pipelineTopology();
  topicOf(topology, topic);
  const limit = intFlag(flags.limit, 'limit') ?? Number.POSITIVE_INFINITY;
  const runtime = await openRuntime(configOf(flags).log);
  const stop = new AbortController();
  process.once('SIGINT', () => stop.abort());
  let printed = 0;
  try {
    await runtime.ensureTopics(topology.topics);
    const positions = (await runtime.endOffsets(topic)).map(() => 0);
    while (printed < limit && !stop.signal.aborted) {
      let got = 0;
      for (const [partition, from] of positions.entries()) {
        for (const r of await runtime.read(topic, partition, from, Math.min(500, limit - printed))) {
          if (printed >= limit) break;
          positions[partition] = r.offset + 1;
          const line = flags['with-meta']
            ? JSON.stringify({
                partition: r.partition,
                offset: r.offset,
                key: r.key,
                timestamp: r.timestamp,
                value: JSON.parse(r.value),
              })
            : r.value;
          process.stdout.write(`${line}\n`);
          printed++;
          got++;
        }
      }
      if (got === 0) {
        if (!flags.follow) break;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
  } finally {
    await runtime.close();
  }
  return 0;
}
