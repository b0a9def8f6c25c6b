import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { createGzip } from 'node:zlib';

/** One synthetic but well-formed PubmedArticle, numbered so every record is distinct. */
export function pubmedRecord(i: number): string {
  const pmid = 20000000 + i;
  return `<PubmedArticle><MedlineCitation Status="MEDLINE" Owner="NLM"><PMID Version="1">${pmid}</PMID><Article PubModel="Print"><Journal><JournalIssue CitedMedium="Print"><PubDate><Year>${2000 + (i % 25)}</Year><Month>Jan</Month></PubDate></JournalIssue><Title>Synthetic journal of biology</Title></Journal><ArticleTitle>Record ${i}: effects of <i>gene ${i % 97}</i> on growth.</ArticleTitle><ELocationID EIdType="doi" ValidYN="Y">10.5555/synthetic.${i}</ELocationID><Abstract><AbstractText Label="BACKGROUND">Gene ${i % 97} is expressed in ${i % 13} tissues of the model organism.</AbstractText><AbstractText Label="RESULTS">Knockout reduced growth by ${(i % 50) + 1}% (p &lt; 0.05) and raised Ca<sup>2+</sup> uptake.</AbstractText></Abstract><PublicationTypeList><PublicationType UI="D016428">Journal Article</PublicationType></PublicationTypeList></Article><MeshHeadingList><MeshHeading><DescriptorName UI="D056186" MajorTopicYN="N">Metagenomics</DescriptorName><QualifierName UI="Q000379" MajorTopicYN="Y">methods</QualifierName></MeshHeading><MeshHeading><DescriptorName UI="D012988" MajorTopicYN="N">Soil Microbiology</DescriptorName></MeshHeading></MeshHeadingList><KeywordList Owner="NOTNLM"><Keyword MajorTopicYN="N">growth</Keyword></KeywordList></MedlineCitation><PubmedData><ArticleIdList><ArticleId IdType="pubmed">${pmid}</ArticleId></ArticleIdList></PubmedData></PubmedArticle>\n`;
}

export const PUBMED_HEAD =
  '<?xml version="1.0" ?>\n<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, 1st January 2024//EN" "https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_240101.dtd">\n<PubmedArticleSet>\n';
export const PUBMED_TAIL = '</PubmedArticleSet>\n';

/** Streams n records to a file (gzipped when the name ends in .gz), never holding the document. */
export async function writePubmedFile(path: string, n: number): Promise<number> {
  const file = createWriteStream(path);
  const gz = path.endsWith('.gz') ? createGzip({ level: 1 }) : null;
  const out = gz ?? file;
  if (gz) gz.pipe(file);
  const write = async (s: string) => {
    if (!out.write(s)) await once(out, 'drain');
  };
  await write(PUBMED_HEAD);
  let batch = '';
  for (let i = 1; i <= n; i++) {
    batch += pubmedRecord(i);
    if (batch.length > 256 * 1024) {
      await write(batch);
      batch = '';
    }
  }
  await write(batch + PUBMED_TAIL);
  out.end();
  await once(file, 'close');
  return n;
}
