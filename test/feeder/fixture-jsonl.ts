// Prints fixture records as JSON lines, for `bioalchemy produce` in the Python export test:
//   npx tsx test/feeder/fixture-jsonl.ts classified N | bioalchemy produce qa.classified
//   npx tsx test/feeder/fixture-jsonl.ts mix | bioalchemy produce mix.state
import { classifiedQa, mix } from './fixtures.js';

const [what, n = '40'] = process.argv.slice(2);
const topics = ['Genetics', 'Ecology', 'Microbiology', 'Botany'];
const lines =
  what === 'mix'
    ? [mix(1)]
    : Array.from({ length: Number(n) }, (_, i) => classifiedQa(i, [topics[i % topics.length]!]));
process.stdout.write(lines.map((l) => `${JSON.stringify(l)}\n`).join(''));
