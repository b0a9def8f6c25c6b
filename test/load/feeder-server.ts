// A load server in a process of its own (for `npm run bench -- feeder-load`, whose clients run in
// the bench process): prints its URL, serves until stdin closes, then prints its errors as JSON.
//   npx tsx test/load/feeder-server.ts [--bare]
import { startLoadServer } from './feeder-load.js';

const server = await startLoadServer({ bare: process.argv.includes('--bare') });
process.stdout.write(`${server.url}\n`);
process.stdin.resume();
process.stdin.on('end', async () => {
  await server.close();
  process.stdout.write(`${JSON.stringify({ errors: server.errors })}\n`);
  process.exit(0);
});
