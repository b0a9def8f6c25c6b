// `npm run chaos [-- embedded|kafkajs|rdkafka ...] [--runs N] [--kills N] [--articles N]`: the chaos
// run of test/chaos/chaos.ts, N times in a row on each runtime named (default: all three). Needs the
// services up (`bash deploy/services.sh up`). Exits non-zero if any run fails a check (chaosPassed),
// a run without a withdrawal included.
import { parseArgs } from 'node:util';
import { type ChaosOptions, chaosPassed, formatReport, runChaos } from './chaos.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    runs: { type: 'string', default: '3' },
    kills: { type: 'string', default: '20' },
    articles: { type: 'string', default: '300' },
    // Of the articles, earlier-published twins produced last: each run withdraws accepted QA.
    twins: { type: 'string', default: '30' },
  },
});
const runtimes = positionals.length ? positionals : ['embedded', 'kafkajs', 'rdkafka'];
let failed = false;
for (const runtime of runtimes) {
  for (let i = 1; i <= Number(values.runs); i++) {
    const log: ChaosOptions['log'] =
      runtime === 'embedded' ? 'embedded' : `kafka://127.0.0.1:19092?client=${runtime}`;
    process.stdout.write(`## ${runtime}, run ${i} of ${values.runs}\n`);
    const report = await runChaos({
      log,
      articles: Number(values.articles),
      twins: Number(values.twins),
      kills: Number(values.kills),
      restartBroker: runtime !== 'embedded',
    });
    process.stdout.write(`${formatReport(report)}\n`);
    if (!chaosPassed(report)) failed = true;
  }
}
process.exit(failed ? 1 : 0);
