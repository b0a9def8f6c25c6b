import { describe, expect, it } from 'vitest';
import { Config } from '../../schemas/config.js';

// Every config key does something: an unknown key, or one that would do nothing, is an error that
// names its path (issue 32: `schemaRegistry` was accepted and ignored).
describe('the config', () => {
  it('refuses an unknown key, naming its path', () => {
    const r = Config.safeParse({ llm: { bogus: 1 } });
    expect(r.success).toBe(false);
    expect(r.error!.issues[0]!.path).toEqual(['llm']);
    expect(r.error!.issues[0]!.message).toContain('bogus');
  });

  it('refuses schemaRegistry and says where the registry is set', () => {
    const r = Config.safeParse({ schemaRegistry: 'http://localhost:8081' });
    expect(r.success).toBe(false);
    expect(r.error!.issues[0]!.path).toEqual(['schemaRegistry']);
    expect(r.error!.issues[0]!.message).toContain('kafka://host:port?registry=');
    expect(Config.safeParse({ log: 'kafka://localhost:9092?registry=http://localhost:8081' }).success).toBe(
      true,
    );
  });

  it('refuses an unknown key inside a poller and its http settings, naming the path', () => {
    const misspelt = Config.safeParse({ sources: [{ kind: 'pubmed', since: '2024-01-01', qeury: 'x' }] });
    expect(misspelt.error!.issues.map((i) => [i.path.join('.'), i.message])).toEqual([
      ['sources.0', 'Unrecognized key: "qeury"'],
    ]);
    const http = Config.safeParse({
      sources: [{ kind: 'biorxiv', since: '2024-01-01', http: { userAgnt: 'me' } }],
    });
    expect(http.error!.issues.map((i) => [i.path.join('.'), i.message])).toEqual([
      ['sources.0.http', 'Unrecognized key: "userAgnt"'],
    ]);
  });
});
