// `npm run bench [suite...]`: each suite measures a figure next to a baseline taken in the same run.
// The kafka and stamps suites need a broker: `bash deploy/services.sh up kafka` first.
const suites: Record<string, () => Promise<{ run(): Promise<string[]> }>> = {
  embedded: () => import('./embedded.js'),
  kafka: () => import('./kafka.js'),
  'kafka-scale': () => import('./kafka-scale.js'),
  scale: () => import('./scale.js'),
  medline: () => import('./medline.js'),
  llm: () => import('./llm.js'),
  'slow-server': () => import('./slow-server.js'),
  feeder: () => import('./feeder.js'),
  'feeder-load': () => import('./feeder-load.js'),
  'feeder-under-load': () => import('./feeder-under-load.js'),
  sampler: () => import('./sampler.js'),
  dashboard: () => import('./dashboard.js'),
  'cli-start': () => import('./cli-start.js'),
  decontaminate: () => import('./decontaminate.js'),
  dedup: () => import('./dedup.js'),
  reward: () => import('./reward.js'),
  'reward-verifier': () => import('./reward-verifier.js'),
  stamps: () => import('./stamps.js'),
  'local-model': () => import('./local-model.js'),
  difficulty: () => import('./difficulty.js'),
};

const wanted = process.argv.slice(2);
let failed = false;
for (const [name, load] of Object.entries(suites)) {
  if (wanted.length && !wanted.includes(name)) continue;
  process.stdout.write(`## ${name}\n`);
  try {
    for (const line of await (await load()).run()) process.stdout.write(`${line}\n`);
  } catch (e) {
    failed = true;
    process.stdout.write(`${name}: could not run: ${(e as Error).message}\n`);
  }
}
process.exit(failed ? 1 : 0);
