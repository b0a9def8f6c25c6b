import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { TopicCodecs } from '../topology/codec.js';
import { configOf, openLog, topologyWith } from './context.js';
import { type GlobalOptions, UsageError } from './usage.js';

export interface ProduceOptions extends GlobalOptions {
  file?: string;
  key?: string;
}

export async function produce(topic: string, opts: ProduceOptions): Promise<void> {
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
  const runtime = await openLog(configOf(opts));
  try {
    await runtime.ensureTopics(topology.topics);
    await runtime.append(records);
  } finally {
    await runtime.close();
  }
  process.stderr.write(`produced ${records.length} record(s) to ${topic}\n`);
}
