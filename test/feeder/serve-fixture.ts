// A feeder over fixture data, for the Python client's tests (clients/python/tests):
//   npx tsx test/feeder/serve-fixture.ts --db FILE [--items N] [--lease-ms MS] [--batch-size N]
//     [--band-pass JSON] (the config's feeder.difficulty.bandPass, for every run)
// Seeds the pool and a mix the first time (the file keeps them after), serves on a free port of
// 127.0.0.1 and prints its URL as the first line of stdout. Killed and started again on the same
// file, it is a restarted feeder.
import { parseArgs } from 'node:util';
import { Feeder } from '../../processors/feeder/feeder.js';
import { DifficultyConfig } from '../../schemas/feeder.js';
import { startServer } from '../../server/feeder-api.js';
import { mix, poolItems } from './fixtures.js';

const { values } = parseArgs({
  options: {
    db: { type: 'string' },
    items: { type: 'string', default: '200' },
    'lease-ms': { type: 'string', default: '60000' },
    'batch-size': { type: 'string', default: '16' },
    'band-pass': { type: 'string' },
  },
});
if (!values.db) throw new Error('--db FILE is required');
const feeder = Feeder.open(values.db, {
  leaseMs: Number(values['lease-ms']),
  batchSize: Number(values['batch-size']),
  readyBatches: 2,
  ...(values['band-pass']
    ? { difficulty: DifficultyConfig.parse({ bandPass: JSON.parse(values['band-pass']) }) }
    : {}),
});
if (feeder.mixVersion === null) {
  feeder.addItems(poolItems(Number(values.items)));
  feeder.setMix(mix(1));
}
const server = await startServer(feeder, { host: '127.0.0.1', port: 0, bodyLimit: 4 * 1024 * 1024 });
// What the processor's timer does in `run`: keep batches cut ahead.
setInterval(() => feeder.prepare(), 200);
process.stdout.write(`${server.url}\n`);
const stop = async () => {
  await server.close();
  feeder.close();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
