import { directTopicAccess, pipelineTopology } from '../processors/pipeline.js';
import type { Config } from '../schemas/config.js';
import { KafkaAccessError } from '../topology/runtime/kafka/access-errors.js';
import { aclsFor, type KafkaAcl, kafkaAclsCommands } from '../topology/runtime/kafka/acls.js';
import { checkAccess, probeKafkajs, probeRdkafka } from '../topology/runtime/kafka/check.js';
import { type KafkaUrl, parseKafkaUrl } from '../topology/runtime/kafka/config.js';
import { KafkaEndpoint } from '../topology/runtime/kafka/endpoint.js';
import { KafkaNames } from '../topology/runtime/kafka/names.js';
import { configOf, loggerOf } from './context.js';
import { SUMMARY_READS } from './summary.js';
import { type GlobalOptions, UsageError } from './usage.js';

export interface KafkaAclsOptions extends GlobalOptions {
  principal: string;
  processors?: string[];
  migrate?: boolean;
  untilIdle?: boolean;
  json?: boolean;
}

export interface KafkaCheckOptions extends GlobalOptions {
  processors?: string[];
  untilIdle?: boolean;
}

function kafkaUrlOf(config: Config): KafkaUrl {
  if (!config.log.startsWith('kafka://'))
    throw new UsageError(`the config's log is ${config.log}, not kafka://host:port`);
  return parseKafkaUrl(config.log);
}

/** The role's ACLs: its processors' (all by default) and what they read and append beside their tasks. */
function roleAcls(
  config: Config,
  url: KafkaUrl,
  principal: string,
  opts: KafkaAclsOptions | KafkaCheckOptions,
): KafkaAcl[] {
  const topology = pipelineTopology();
  const processors = opts.processors ?? topology.processors.map((p) => p.name);
  const direct = directTopicAccess(processors);
  try {
    return aclsFor(topology, new KafkaNames(url.app ?? config.app), principal, {
      processors,
      reads: [...direct.reads, ...(opts.untilIdle ? Object.values(SUMMARY_READS) : [])],
      writes: direct.writes,
      creates: 'migrate' in opts && opts.migrate === true,
    });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

export async function kafkaAcls(opts: KafkaAclsOptions): Promise<void> {
  const config = configOf(opts);
  const url = kafkaUrlOf(config);
  const acls = roleAcls(config, url, opts.principal, opts);
  if (opts.json) process.stdout.write(`${JSON.stringify(acls, null, 2)}\n`);
  else process.stdout.write(`${kafkaAclsCommands(acls, url.brokers.join(',')).join('\n')}\n`);
}

export async function kafkaCheck(opts: KafkaCheckOptions): Promise<void> {
  const config = configOf(opts);
  const url = kafkaUrlOf(config);
  const endpoint = KafkaEndpoint.of(url.brokers, config.connection.kafka, { log: loggerOf(opts) });
  const say = (line: string) => process.stdout.write(`${line}\n`);
  const seen = await probeKafkajs(endpoint);
  say(
    `connected (kafkajs, ${endpoint.describe().protocol}): cluster ${seen.clusterId}, brokers ${seen.brokers.join(', ')}, controller ${seen.controller}`,
  );
  // The partition reader is librdkafka's whichever client runs the tasks: both must connect.
  const rd = await probeRdkafka(endpoint);
  say(`connected (librdkafka): brokers ${rd.brokers.join(', ')}`);
  const checks = await checkAccess(endpoint, roleAcls(config, url, 'User:check', opts));
  for (const c of checks) say(`${c.fault ? 'DENIED' : 'ok    '} ${c.resource}`);
  const denied = checks.find((c) => c.fault);
  if (denied?.fault) throw new KafkaAccessError(denied.fault);
}
