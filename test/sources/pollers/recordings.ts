import { fixture, json, notFound, type Route, xml } from './fake-api.js';

/**
 * The recorded API responses behind the routes the pollers use, served as the real APIs would:
 * by path and the parameters that select a response. Anything else is a 404, so a poller asking
 * for something unexpected fails the test.
 */

const RECORDED_SET = fixture('pubmed/efetch-recorded.xml');
const PUBMED_RECORDS = new Map(
  [...RECORDED_SET.matchAll(/<PubmedArticle>[\s\S]*?<\/PubmedArticle>/g)].map((m) => [
    /<PMID Version="1">(\d+)<\/PMID>/.exec(m[0])![1]!,
    m[0],
  ]),
);
const SET_HEAD = RECORDED_SET.slice(0, RECORDED_SET.indexOf('<PubmedArticle>'));

/** efetch of some PMIDs: the recorded records, in the order asked, as one PubmedArticleSet. */
export function efetchBody(ids: string[]): string {
  const records = ids.flatMap((id) => PUBMED_RECORDS.get(id) ?? []);
  return `${SET_HEAD}${records.join('\n')}\n</PubmedArticleSet>\n`;
}

export const pubmedRoute: Route = (req) => {
  const q = req.query;
  if (req.path.endsWith('/esearch.fcgi') && q.get('db') === 'pubmed' && q.get('retmode') === 'json') {
    const day = q.get('mindate');
    if (q.get('datetype') !== 'edat' || !day || day !== q.get('maxdate')) return notFound;
    try {
      return json(fixture(`pubmed/esearch-${day.replaceAll('/', '-')}.json`));
    } catch {
      return notFound;
    }
  }
  if (req.path.endsWith('/efetch.fcgi') && q.get('db') === 'pubmed' && q.get('retmode') === 'xml') {
    return xml(efetchBody((q.get('id') ?? '').split(',')));
  }
  return notFound;
};

const EPMC_PAGES = JSON.parse(fixture('europepmc/pages.json')) as Record<string, Record<string, string>>;

export const europePmcRoute: Route = (req) => {
  const q = req.query;
  if (req.path.endsWith('/search') && q.get('format') === 'json' && q.get('resultType') === 'core') {
    const day = /FIRST_IDATE:\[(\d{4}-\d{2}-\d{2}) TO \1\]/.exec(q.get('query') ?? '')?.[1];
    const file = day && EPMC_PAGES[day]?.[q.get('cursorMark') ?? ''];
    return file ? json(fixture(`europepmc/${file}`)) : notFound;
  }
  const full = /\/(PMC\d+)\/fullTextXML$/.exec(req.path);
  if (full) {
    try {
      return xml(fixture(`europepmc/${full[1]}.xml`));
    } catch {
      return notFound;
    }
  }
  return notFound;
};

/** bioRxiv; jatsxml links point at www.biorxiv.org and are re-pointed at the local server. */
export const biorxivRoute: Route = (req, server) => {
  const details = /\/details\/biorxiv\/(\d{4}-\d{2}-\d{2})\/(\d{4}-\d{2}-\d{2})\/(\d+)\/json$/.exec(req.path);
  if (details) {
    const [, from, to, cursor] = details;
    if (from !== to) return notFound;
    try {
      const body = fixture(`biorxiv/details-${from}-${cursor}.json`);
      return json(body.replaceAll('https://www.biorxiv.org/', `${server.url}/www.biorxiv.org/`));
    } catch {
      return json(JSON.stringify({ messages: [{ status: 'no posts found' }], collection: [] }));
    }
  }
  const jats = /\/www\.biorxiv\.org\/content\/early\/\d{4}\/\d{2}\/\d{2}\/(.+\.source\.xml)$/.exec(req.path);
  if (jats) {
    try {
      return xml(fixture(`biorxiv/${jats[1]}`));
    } catch {
      return notFound;
    }
  }
  return notFound;
};
