import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { VALUES_SCHEMA_PATH, valuesSchemaText } from '../../deploy/helm/values-schema.js';
import { pipelineTopology } from '../../processors/pipeline.js';
import { Config } from '../../schemas/config.js';
import { PROBE_PATHS } from '../../server/probes.js';

const CHART = fileURLToPath(new URL('../../deploy/helm/bioalchemy', import.meta.url));
const CRD_SCHEMAS = fileURLToPath(new URL('../../deploy/helm/crd-schemas', import.meta.url));
const TOOLS = fileURLToPath(new URL('../../deploy/tools/', import.meta.url));
const CI_VALUES = readdirSync(`${CHART}/ci`).filter((f) => f.endsWith('.yaml'));
/** The Kubernetes version the chart is rendered for, and whose schemas kubeconform checks against. */
const KUBE_VERSION = '1.33.0';

/** A tool's path from its cached build (deploy/tools/*.sh; .ci/run builds them before the tests). */
function tool(script: string, ...args: string[]): string {
  const r = spawnSync('bash', [`${TOOLS}${script}`, ...args], { encoding: 'utf8', timeout: 900_000 });
  if (r.status !== 0) throw new Error(`${script} ${args.join(' ')}: ${r.stderr}`);
  return r.stdout.trim().split('\n').at(-1)!;
}

function sh(cmd: string, args: string[], input?: string) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', input, timeout: 120_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

/** The chart's rendered documents (helm template), each parsed from its YAML by helm itself as JSON. */
function render(helm: string, args: string[]): { code: number | null; docs: Manifest[]; err: string } {
  const r = sh(helm, ['template', 't', CHART, '--kube-version', KUBE_VERSION, ...args]);
  if (r.code !== 0) return { code: r.code, docs: [], err: r.err };
  return { code: 0, docs: parseYamlDocs(r.out), err: r.err };
}

interface Manifest {
  kind: string;
  metadata: { name: string; annotations?: Record<string, string> };
  // biome-ignore lint/suspicious/noExplicitAny: rendered Kubernetes objects, checked field by field
  spec: any;
  data?: Record<string, string>;
}

/** YAML documents to JSON through python3's PyYAML (the machine's Python has it; no YAML parser is a dependency here). */
function parseYamlDocs(yaml: string): Manifest[] {
  const r = spawnSync(
    'python3',
    ['-c', 'import sys, json, yaml; print(json.dumps([d for d in yaml.safe_load_all(sys.stdin) if d]))'],
    { encoding: 'utf8', input: yaml },
  );
  if (r.status !== 0) throw new Error(`YAML not parsed: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

describe('the Helm chart (deploy/helm/bioalchemy)', () => {
  let helm: string;
  let kubeconform: string;
  let unittest: string;
  let k8sSchemas: string;
  /** The chart rendered with one of its ci/ values files, as helm prints it. */
  const templateWith = (values: string) =>
    sh(helm, ['template', 't', CHART, '--kube-version', KUBE_VERSION, '-f', `${CHART}/ci/${values}`]);
  const conform = (yaml: string) =>
    sh(
      kubeconform,
      [
        '-strict',
        '-summary',
        '-schema-location',
        `${k8sSchemas}/{{ .ResourceKind }}{{ .KindSuffix }}.json`,
        '-schema-location',
        `${CRD_SCHEMAS}/{{ .ResourceKind }}{{ .KindSuffix }}.json`,
        '-',
      ],
      yaml,
    );
  beforeAll(() => {
    helm = tool('go-tool.sh', 'helm');
    kubeconform = tool('go-tool.sh', 'kubeconform');
    unittest = tool('go-tool.sh', 'helm-unittest');
    k8sSchemas = tool('kubernetes-validate.sh');
  }, 900_000);

  it('values.schema.json is what the zod config schema makes (one source)', () => {
    // Compared as JSON: biome formats the file.
    expect(JSON.parse(readFileSync(VALUES_SCHEMA_PATH, 'utf8'))).toEqual(JSON.parse(valuesSchemaText()));
  });

  it.each(CI_VALUES)('helm lint --strict with ci/%s', (values) => {
    const r = sh(helm, [
      'lint',
      '--strict',
      '--kube-version',
      KUBE_VERSION,
      CHART,
      '-f',
      `${CHART}/ci/${values}`,
    ]);
    expect(r.code, r.out + r.err).toBe(0);
    expect(r.out).toContain('1 chart(s) linted, 0 chart(s) failed');
  });

  it.each(CI_VALUES)('helm template with ci/%s passes kubeconform -strict', (values) => {
    const t = templateWith(values);
    expect(t.code, t.err).toBe(0);
    const k = conform(t.out);
    expect(k.code, k.out + k.err).toBe(0);
    const [, resources, valid] = k.out.match(
      /(\d+) resources found .* Valid: (\d+), Invalid: 0, Errors: 0, Skipped: 0/,
    )!;
    expect(Number(valid)).toBe(Number(resources));
    expect(Number(valid)).toBeGreaterThan(5);
  });

  it('kubeconform -strict refuses a field Kubernetes does not know (the check can fail)', () => {
    const t = templateWith('minimal-values.yaml');
    const k = conform(t.out.replace('  strategy:\n', '  replicaz: 3\n  strategy:\n'));
    expect(k.code).not.toBe(0);
    expect(k.out).toContain('replicaz');
  });

  it('helm-unittest suites pass', () => {
    const r = sh(unittest, ['--color=false', CHART]);
    expect(r.code, r.out + r.err).toBe(0);
    expect(r.out).toMatch(/Test Suites:\s+\d+ passed, \d+ total/);
    expect(r.out).not.toMatch(/failed/i);
  });

  it('a wrong value fails at install: the config checked by the zod-made schema', () => {
    const base = ['-f', `${CHART}/ci/minimal-values.yaml`];
    expect(render(helm, base).code).toBe(0);
    const wrongType = render(helm, [...base, '--set-json', 'config={"sampler":{"alpha":"half"}}']);
    expect(wrongType.code).not.toBe(0);
    expect(wrongType.err).toMatch(/config.*sampler.*alpha/s);
    const unknownKey = render(helm, [...base, '--set', 'config.notAKey=1']);
    expect(unknownKey.code).not.toBe(0);
    expect(unknownKey.err).toContain('notAKey');
    // log and clickhouse are the chart's to set, from kafka and clickhouse.
    expect(render(helm, [...base, '--set', 'config.log=file:/x']).code).not.toBe(0);
    expect(render(helm, [...base, '--set', 'kafka.client=librdkafka']).code).not.toBe(0);
    // A grace period not above the process's own 9 s stop bound.
    const grace = render(helm, [...base, '--set', 'terminationGracePeriodSeconds=9']);
    expect(grace.code).not.toBe(0);
    expect(grace.err).toContain('terminationGracePeriodSeconds');
  });

  it("the KEDA triggers are each processor's inputs as the pipeline declares them", () => {
    const reads = new Map(pipelineTopology().processors.map((p) => [p.name, p.reads]));
    const processors = [...reads.keys()];
    const r = render(helm, [
      '-f',
      `${CHART}/ci/minimal-values.yaml`,
      '--set',
      'workers.serve.enabled=false',
      '--set',
      `workers.pipeline.processors={${processors.join(',')}}`,
      '--set',
      'workers.pipeline.autoscaling.enabled=true',
    ]);
    expect(r.code, r.err).toBe(0);
    const so = r.docs.find((d) => d.kind === 'ScaledObject')!;
    const triggers = (so.spec.triggers as { metadata: { consumerGroup: string; topic: string } }[]).map(
      (t) => `${t.metadata.consumerGroup} ${t.metadata.topic}`,
    );
    const expected = processors.flatMap((p) => reads.get(p)!.map((t) => `bioalchemy.${p} bioalchemy.${t}`));
    expect(triggers.sort()).toEqual(expected.sort());
    expect(r.docs.find((d) => d.kind === 'Deployment')!.spec.replicas).toBeUndefined();
  });

  it('probes name the paths the app serves (the image test hits the same)', () => {
    const r = render(helm, ['-f', `${CHART}/ci/minimal-values.yaml`]);
    const deployments = r.docs.filter((d) => d.kind === 'Deployment');
    expect(deployments).toHaveLength(2);
    // The helm test pod ships with the chart (not left out by .helmignore) and checks /readyz.
    const testPod = r.docs.find((d) => d.metadata.name === 't-bioalchemy-test-connection')!;
    expect(testPod.metadata.annotations!['helm.sh/hook']).toBe('test');
    expect(JSON.stringify(testPod.spec)).toContain(PROBE_PATHS.ready);
    for (const d of deployments) {
      const c = d.spec.template.spec.containers[0];
      expect(c.livenessProbe.httpGet).toEqual({ path: PROBE_PATHS.live, port: 'metrics' });
      expect(c.readinessProbe.httpGet).toEqual({ path: PROBE_PATHS.ready, port: 'metrics' });
      const port = c.ports.find((p: { name: string }) => p.name === 'metrics').containerPort;
      expect(c.args).toEqual(
        expect.arrayContaining(['--metrics-port', String(port), '--metrics-host', '0.0.0.0']),
      );
    }
  });

  it('each ci/ values file renders a config the project itself accepts (the connection included)', () => {
    for (const values of CI_VALUES) {
      const docs = parseYamlDocs(templateWith(values).out);
      for (const d of docs.filter((x) => x.kind === 'ConfigMap' && x.data?.['config.json'])) {
        const parsed = Config.safeParse(JSON.parse(d.data!['config.json']!));
        expect(parsed.success, `${values} ${d.metadata.name}: ${parsed.error?.message}`).toBe(true);
      }
    }
    const secured = parseYamlDocs(templateWith('sasl-ssl-values.yaml').out).find(
      (d) => d.kind === 'ConfigMap',
    )!;
    expect(JSON.parse(secured.data!['config.json']!).connection.kafka.sasl.password).toEqual({
      env: 'KAFKA_SASL_PASSWORD',
    });
  });

  it('a config change changes checksum/config; secrets never reach the ConfigMap', () => {
    const checksum = (args: string[]) =>
      render(helm, ['-f', `${CHART}/ci/keda-values.yaml`, ...args]).docs.find((d) => d.kind === 'Deployment')!
        .spec.template.metadata.annotations['checksum/config'];
    const before = checksum([]);
    expect(before).toMatch(/^[0-9a-f]{64}$/);
    expect(checksum([])).toBe(before);
    expect(checksum(['--set', 'config.llm.model=other'])).not.toBe(before);
    const all = sh(helm, [
      'template',
      't',
      CHART,
      '--kube-version',
      KUBE_VERSION,
      '-f',
      `${CHART}/ci/keda-values.yaml`,
    ]).out;
    const docs = parseYamlDocs(all);
    for (const d of docs.filter((x) => x.kind === 'ConfigMap'))
      expect(d.data!['config.json']).not.toMatch(/api-key|password|secretKeyRef/);
    expect(docs.some((d) => d.kind === 'Secret')).toBe(false);
  });
});
