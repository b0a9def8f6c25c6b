import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { Command } from 'commander';
import { TopicCodecs } from '../topology/codec.js';
import { openRuntime } from '../topology/runtime/open.js';
import { configOf, type GlobalOptions, topologyWith, UsageError } from './context.js';

interface ProduceOptions extends GlobalOptions {
  file?: string;
  key?: string;
}

export function produceCommand(): Command {
  return new Command('produce')
    .description(
      "validate JSON lines (stdin or --file) against the topic's schema and append them, all or nothing",
    )
    .argument('<topic>', 'a topic of the pipeline (see "topology describe")')
    .option('--file <file>', 'read the lines from this file instead of stdin')
    .option('--key <field>', "take each record's key from this field of the value")
    .addHelpText(
      'after',
      `
Examples:
  $ bioalchemy produce articles --file articles.jsonl --key id
  $ cat qa.jsonl | bioalchemy produce qa.candidates`,
    )
    .action((topic: string, _opts, cmd: Command) => produce(topic, cmd.optsWithGlobals<ProduceOptions>()));
}

async function produce(topic: string, opts: ProduceOptions): Promise<void> {
  const topology = topologyWith(topic);
  const codecs = new TopicCodecs(topology);
  const input = opts.file ? createReadStream(opts.file) : process.stdin;
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
    const key = opts.key ? (value as Record<string, unknown>)?.[opts.key] : undefined;
    records.push({ topic, key: key == null ? null : String(key), value: encoded });
  }
  // All or nothing: one bad line refuses the whole input, so a fixed file can simply be sent again.
  const runtime = await openRuntime(configOf(opts).log);
  try {
    await runtime.ensureTopics(topology.topics);
    await runtime.append(records);
  } finally {
    await runtime.close();
  }
  process.stderr.write(`produced ${records.length} record(s) to ${topic}\n`);
}
