import type { WorkLink, WorkRecord } from '../../schemas/article.js';

/** Duplicates kept out of the dataset, by kind: records folded into works, and questions refused. */
export interface DuplicatesRemovedCounts {
  /** Records linked into a work that already had one, by what linked them (sources/works.ts). */
  readonly records: Record<Exclude<WorkLink, 'first'>, number>;
  /** Works of more than one record. */
  readonly worksWithCopies: number;
  /**
   * QA refused: the same candidate again, the same question, or a near-duplicate; and accepted QA
   * withdrawn when a duplicate that comes before them arrived later (processors/dedup/).
   */
  readonly questions: {
    readonly 'same-candidate': number;
    readonly exact: number;
    readonly near: number;
    readonly withdrawn: number;
  };
}

/**
 * What `bioalchemy mix` reports as removed duplicates, from the log: each work's latest record
 * list on `articles` (a work's later records supersede its earlier ones), the duplicate codes
 * on `qa.rejected`, and `qa.withdrawn`.
 */
export class DuplicatesRemoved {
  private readonly works = new Map<string, readonly WorkRecord[]>();
  private readonly questions = { 'same-candidate': 0, exact: 0, near: 0, withdrawn: 0 };

  addArticle(value: unknown): void {
    const a = value as { id?: string; records?: WorkRecord[] } | null;
    if (typeof a?.id === 'string' && Array.isArray(a.records)) this.works.set(a.id, a.records);
  }

  addRejected(value: unknown): void {
    const qa = value as {
      candidate?: { id?: string };
      grade?: { codes?: string[]; duplicateOf?: string };
    } | null;
    const codes = qa?.grade?.codes ?? [];
    if (codes.includes('near-duplicate')) this.questions.near++;
    else if (codes.includes('duplicate'))
      this.questions[qa?.grade?.duplicateOf === qa?.candidate?.id ? 'same-candidate' : 'exact']++;
  }

  addWithdrawn(): void {
    this.questions.withdrawn++;
  }

  get counts(): DuplicatesRemovedCounts {
    const records = { id: 0, relation: 0, text: 0, 'near-text': 0 };
    let worksWithCopies = 0;
    for (const list of this.works.values()) {
      if (list.length > 1) worksWithCopies++;
      for (const r of list) if (r.link !== 'first') records[r.link]++;
    }
    return { records, worksWithCopies, questions: { ...this.questions } };
  }
}
