// The client on a worker thread, for `npm run bench -- kafka`: node-rdkafka consumes and produces
// here, and records cross to the main thread packed in one transferred buffer per batch, so the
// main thread does only the codec work. Plain JavaScript: a worker does not inherit tsx's hooks.
import { createRequire } from 'node:module';
import { parentPort, workerData } from 'node:worker_threads';

const rdkafka = createRequire(import.meta.url)('node-rdkafka');
const { config, input, output, batch } = workerData;

const producer = new rdkafka.Producer(config.producer);
const consumer = new rdkafka.KafkaConsumer(config.consumer, config.consumerTopic);
await new Promise((r) => producer.connect({}, r));
await new Promise((r) => consumer.connect({}, r));
consumer.subscribe([input]);
consumer.setDefaultConsumeTimeout(500);

/** Batches handed over and not yet answered: at most two, so the worker reads one ahead. */
let credits = 2;
let wake = null;
let stopping = false;

/** A batch as one buffer (values, keys, headers' values) and five Int32 fields per record. */
function pack(messages) {
  let size = 0;
  for (const m of messages) size += (m.value?.length ?? 0) + (m.key?.length ?? 0);
  const buf = Buffer.allocUnsafeSlow(size);
  const meta = new Int32Array(messages.length * 5);
  const stamps = [];
  let at = 0;
  messages.forEach((m, i) => {
    meta[i * 5] = at;
    meta[i * 5 + 1] = m.value ? m.value.copy(buf, at) : -1;
    at += Math.max(0, meta[i * 5 + 1]);
    meta[i * 5 + 2] = at;
    meta[i * 5 + 3] = m.key ? m.key.copy(buf, at) : -1;
    at += Math.max(0, meta[i * 5 + 3]);
    meta[i * 5 + 4] = m.partition;
    // The stamp and its seal, as the engine writes them (header values in as Buffers, out as strings).
    stamps.push(
      m.headers?.map((h) => Object.fromEntries(Object.entries(h).map(([k, v]) => [k, v.toString()]))) ?? null,
    );
  });
  return { buf: buf.buffer, meta, stamps, n: messages.length };
}

parentPort.on('message', (msg) => {
  if (msg.type === 'produce') {
    const buf = Buffer.from(msg.buf);
    const { meta, stamps } = msg;
    for (let i = 0; i < msg.n; i++) {
      const value = meta[i * 5 + 1] < 0 ? null : buf.subarray(meta[i * 5], meta[i * 5] + meta[i * 5 + 1]);
      const key =
        meta[i * 5 + 3] < 0 ? null : buf.subarray(meta[i * 5 + 2], meta[i * 5 + 2] + meta[i * 5 + 3]);
      const headers = stamps[i] ?? undefined;
      producer.produce(output, meta[i * 5 + 4], value, key, undefined, undefined, headers);
    }
    credits++;
    wake?.();
  } else if (msg.type === 'finish') {
    stopping = true;
    wake?.();
  }
});

while (!stopping) {
  if (credits === 0) {
    await new Promise((r) => {
      wake = r;
    });
    wake = null;
    continue;
  }
  const messages = await new Promise((resolve, reject) =>
    consumer.consume(batch, (err, m) => (err ? reject(err) : resolve(m))),
  );
  if (stopping) break;
  if (messages.length === 0) continue;
  credits--;
  const packed = pack(messages);
  parentPort.postMessage({ type: 'batch', ...packed }, [packed.buf, packed.meta.buffer]);
}
await new Promise((r) => producer.flush(30_000, r));
parentPort.postMessage({ type: 'flushed' });
await new Promise((r) => consumer.disconnect(r));
await new Promise((r) => producer.disconnect(r));
parentPort.close();
