import { Command } from 'commander';
import type { KafkaAclsOptions, KafkaCheckOptions } from '../kafka.js';

const list = (value: string) => value.split(',').filter(Boolean);

export function kafkaCommand(): Command {
  const kafka = new Command('kafka').description(
    "the Kafka cluster: a role's ACLs, and a check of the connection",
  );
  kafka
    .command('acls')
    .description("print exactly the ACLs a role needs, computed from the topology and the config's app")
    .requiredOption('--principal <principal>', 'the principal the role connects as, e.g. User:bioalchemy')
    .option('--processors <names>', 'the processors the role runs (default: all)', list)
    .option('--migrate', 'the role also runs `migrate`: it creates the topics and sets their configs')
    .option(
      '--until-idle',
      'the role runs `run --until-idle`, whose summary reads the dead letters and rejections',
    )
    .option('--json', 'the ACL bindings as one JSON array')
    .addHelpText(
      'after',
      `
Each line is a kafka-acls.sh command to run with an admin's client config (admin.properties).

Examples:
  $ bioalchemy kafka acls --principal User:pipeline --processors extract,grade,dedup-bands,dedup,classify
  $ bioalchemy kafka acls --principal User:ops --migrate --json`,
    )
    .action(async (_opts, cmd: Command) =>
      (await import('../kafka.js')).kafkaAcls(cmd.optsWithGlobals<KafkaAclsOptions>()),
    );
  kafka
    .command('check')
    .description(
      "connect with the configured security, describe the cluster, and check the access the role's processors need",
    )
    .option('--processors <names>', 'the processors the role runs (default: all)', list)
    .option('--until-idle', 'the role runs `run --until-idle` (see kafka acls --until-idle)')
    .addHelpText(
      'after',
      `
A refused password, an unknown CA, a hostname mismatch, a mechanism the broker lacks, a librdkafka
build without a feature the config needs, or a missing ACL is one line naming the config key to
fix and quoting the broker; the exit status is then 1.

Examples:
  $ bioalchemy kafka check --config prod.json
  $ bioalchemy kafka check --processors feeder,count-sink,sampler,llm-calls`,
    )
    .action(async (_opts, cmd: Command) =>
      (await import('../kafka.js')).kafkaCheck(cmd.optsWithGlobals<KafkaCheckOptions>()),
    );
  return kafka;
}
