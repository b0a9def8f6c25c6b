// The raw copy for `npm run bench -- kafka` with node-rdkafka on a worker thread
// (kafka-copy-worker.mjs) and emit's codec work (parse, zod, serialise) here on the main thread:
// each batch crosses as one transferred buffer. Prints one JSON line: the records after the first
// batch and the milliseconds they took, as the other raw copies count them.
//
// usage: kafka-worker-copy.ts BROKER INPUT OUTPUT N BATCH
import { Worker } from 'node:worker_threads';
import { RECORD_SCHEMAS } from '../schemas/index.js';
import { rawRdkafkaConfig } from './raw-rdkafka-config.js';

const [broker, input, output, total, batch] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
];
const N = Number(total);
const article = RECORD_SCHEMAS.article;
const worker = new Worker(new URL('./kafka-copy-worker.mjs', import.meta.url), {
  workerData: { config: rawRdkafkaConfig(broker, input), input, output, batch: Number(batch) },
});
type Packed = { buf: ArrayBuffer; meta: Int32Array; stamps: (string | null)[]; n: number };
let moved = 0;
let started = 0;
let firstBatch = 0;
const ms = await new Promise<number>((resolve, reject) => {
  worker.on('error', reject);
  worker.on('message', (msg: { type: 'flushed' } | ({ type: 'batch' } & Packed)) => {
    if (msg.type === 'flushed') return resolve(performance.now() - started);
    const inputs = Buffer.from(msg.buf);
    const { meta, n } = msg;
    const values: string[] = [];
    let size = 0;
    for (let i = 0; i < n; i++) {
      const at = meta[i * 5]!;
      const len = meta[i * 5 + 1]!;
      const value =
        len < 0 ? '' : JSON.stringify(article.parse(JSON.parse(inputs.toString('utf8', at, at + len))));
      values.push(value);
      size += Buffer.byteLength(value) + Math.max(0, meta[i * 5 + 3]!);
    }
    const out = Buffer.allocUnsafeSlow(size);
    const outMeta = new Int32Array(n * 5);
    let at = 0;
    for (let i = 0; i < n; i++) {
      outMeta[i * 5] = at;
      outMeta[i * 5 + 1] = meta[i * 5 + 1]! < 0 ? -1 : out.write(values[i]!, at);
      at += Math.max(0, outMeta[i * 5 + 1]!);
      const keyAt = meta[i * 5 + 2]!;
      const keyLen = meta[i * 5 + 3]!;
      outMeta[i * 5 + 2] = at;
      outMeta[i * 5 + 3] = keyLen < 0 ? -1 : inputs.copy(out, at, keyAt, keyAt + keyLen);
      at += Math.max(0, keyLen);
      outMeta[i * 5 + 4] = meta[i * 5 + 4]!;
    }
    const reply = { type: 'produce', buf: out.buffer, meta: outMeta, stamps: msg.stamps, n };
    worker.postMessage(reply, [out.buffer, outMeta.buffer]);
    moved += n;
    if (!started) {
      started = performance.now();
      firstBatch = moved;
    }
    if (moved >= N) worker.postMessage({ type: 'finish' });
  });
});
await new Promise((resolve) => worker.once('exit', resolve));
process.stdout.write(`${JSON.stringify({ ms, records: N - firstBatch })}\n`);
