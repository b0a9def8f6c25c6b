import { Command } from 'commander';
import { pipelineTopology } from '../processors/pipeline.js';
import { describeTopology } from '../topology/topology.js';

export function topologyCommand(): Command {
  const topology = new Command('topology').description('the pipeline as data: topics, sources, processors');
  topology
    .command('describe')
    .description('print topics, sources and processors, with what each reads and writes')
    .addHelpText('after', '\nExample:\n  $ bioalchemy topology describe')
    .action(() => {
      process.stdout.write(`${describeTopology(pipelineTopology())}\n`);
    });
  return topology;
}
