// `npm run bench`: each module measures a figure next to a baseline taken in the same run.
const suites: Record<string, () => Promise<{ run(): Promise<string[]> }>> = {
  embedded: () => import('./embedded.js'),
  kafka: () => import('./kafka.js'),
  medline: () => import('./medline.js'),
};

const wanted = process.argv.slice(2);
for (const [name, load] of Object.entries(suites)) {
  if (wanted.length && !wanted.includes(name)) continue;
  process.stdout.write(`## ${name}\n`);
  for (const line of await (await load()).run()) process.stdout.write(`${line}\n`);
}
