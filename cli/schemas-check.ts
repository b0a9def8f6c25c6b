import { pipelineTopology } from '../processors/pipeline.js';
import { parseKafkaUrl } from '../topology/runtime/kafka/config.js';
import { KafkaNames } from '../topology/runtime/kafka/names.js';
import { checkSubjects, type SubjectCheck } from '../topology/runtime/kafka/registry-check.js';
import { registryClientConfig } from '../topology/runtime/kafka/registry-client.js';
import { configOf } from './context.js';
import { ExitStatus, type GlobalOptions, UsageError } from './usage.js';

/** `schemas --check` exits so when the registry would refuse a schema at start. */
export const SCHEMAS_BREAK = 3;

export interface SchemasCheckOptions extends GlobalOptions {
  json?: boolean;
}

/**
 * What starting this code would do to each registry subject of the pipeline, under the
 * deployment's compatibility policy (the log URL's), before it is deployed: the registry is asked,
 * nothing is registered.
 */
export async function schemasCheck(opts: SchemasCheckOptions): Promise<void> {
  const config = configOf(opts);
  if (!config.log.startsWith('kafka://'))
    throw new UsageError(
      `schemas --check needs a Schema Registry: the log is ${config.log}, not kafka://…?registry=`,
    );
  const url = parseKafkaUrl(config.log);
  if (!url.registry)
    throw new UsageError(`schemas --check: the log URL names no registry (add registry=http://…)`);
  const checks = await checkSubjects(
    registryClientConfig(url.registry, config.connection.registry),
    new KafkaNames(url.app ?? config.app),
    pipelineTopology().topics,
    url.compatibility,
  );
  if (opts.json) for (const c of checks) process.stdout.write(`${JSON.stringify(c)}\n`);
  else process.stdout.write(describe(checks, url.compatibility));
  const breaking = checks.filter((c) => c.verdict === 'breaks');
  if (breaking.length)
    throw new ExitStatus(
      `${breaking.length} subject(s) would refuse the new schema under ${url.compatibility}: ${breaking.map((c) => c.subject).join(', ')}`,
      SCHEMAS_BREAK,
    );
}

function describe(checks: readonly SubjectCheck[], policy: string): string {
  const width = Math.max(...checks.map((c) => c.subject.length));
  const lines = checks.map((c) => {
    const rule =
      c.rule === policy || c.verdict === 'new'
        ? ''
        : ` (rule ${c.rule ?? 'the default'}, set to ${policy} at start)`;
    return `${c.subject.padEnd(width)}  ${c.schema.padEnd(14)} ${c.verdict}${rule}`;
  });
  const earlier = [...new Set(checks.flatMap((c) => c.earlier))];
  if (earlier.length)
    lines.push(
      '',
      `subjects of earlier generations, kept (their records are read by schema id): ${earlier.join(', ')}`,
    );
  return `compatibility ${policy}\n${lines.join('\n')}\n`;
}
