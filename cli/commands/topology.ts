import { Command } from 'commander';

export function topologyCommand(): Command {
  const topology = new Command('topology').description('the pipeline as data: topics, sources, processors');
  topology
    .command('describe')
    .description('print topics, sources and processors, with what each reads and writes')
    .addHelpText('after', '\nExample:\n  $ bioalchemy topology describe')
    .action(async () => {
      const { pipelineTopology } = await import('../../processors/pipeline.js');
      const { describeTopology } = await import('../../topology/topology.js');
      process.stdout.write(`${describeTopology(pipelineTopology())}\n`);
    });
  return topology;
}
