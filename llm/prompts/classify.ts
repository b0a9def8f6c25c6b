import { z } from 'zod';
import type { LlmMessage } from '../../schemas/llm.js';
import type { Taxonomy } from '../../schemas/taxonomy.js';
import { articleBlock, DATA_RULE, dataBlock, QA_RULE } from './data-block.js';

/** MeSH Biology classification of one QA pair: multi-label, each label with a confidence. */
export const CLASSIFY_PROMPT = 'classify-v2';

/**
 * What each MeSH Biology subcategory covers, in our words after the MeSH scope notes. A category
 * of a user's own taxonomy without a line here is offered by its name alone.
 */
const SCOPES: Record<string, string> = {
  botany: 'plants: their structure, physiology, growth, diversity and classification',
  'cell-biology':
    'cells as living units: organelles, cell division, signalling inside and between cells, cell physiology',
  'computational-biology':
    'computing applied to biology: sequence and structure analysis, genomics and other -omics data analysis, modelling and simulation, bioinformatics methods and databases',
  cryobiology: 'life at low temperature: freezing, cryopreservation, cold tolerance',
  cytology:
    'the microscopic study of cells and their morphology, including cytological staining and diagnosis',
  'developmental-biology':
    'how organisms grow and develop: embryogenesis, differentiation, morphogenesis, regeneration, ageing',
  ecology:
    'organisms and their environment: populations, communities, ecosystems, interactions, biodiversity',
  exobiology:
    'life beyond Earth and the origin of life: astrobiology, life in extreme or extraterrestrial conditions',
  genetics:
    'heredity and variation: genes, genomes, mutations, inheritance, gene expression and its regulation, population genetics',
  'laboratory-animal-science':
    'the breeding, care and use of animals in research, including animal models as such',
  microbiology:
    'microorganisms: bacteria, viruses, fungi, protozoa; their physiology, genetics, pathogenicity and interactions',
  'molecular-biology':
    'biological macromolecules and their interactions: DNA, RNA and protein structure and function, replication, transcription, translation at the molecular level',
  'natural-history':
    'the description and observation of organisms in nature: field studies, collections, species descriptions',
  neurobiology:
    'the nervous system: neurons, synapses, neural circuits, brain function and behaviour at the biological level',
  parasitology: 'parasites and their hosts: parasitic life cycles, infection, host-parasite interactions',
  photobiology:
    'effects of light on living organisms: photosynthesis, vision, circadian light responses, UV damage',
  radiobiology:
    'effects of ionising and non-ionising radiation on living organisms, radiation damage and protection',
  sociobiology: 'the biological basis of social behaviour: cooperation, kin selection, animal societies',
  'synthetic-biology':
    'designing and building biological parts, circuits and organisms; genetic engineering toward new functions',
  zoology: 'animals: their structure, physiology, behaviour, diversity and classification',
};

export function classifyReply(taxonomy: Taxonomy) {
  const ids = taxonomy.categories.map((c) => c.id) as [string, ...string[]];
  return z
    .object({
      labels: z
        .array(
          z
            .object({
              // A label outside the taxonomy names itself in the reason (for the repair request and
              // the dead letter), not the whole list of ids.
              category: z.enum(ids, {
                error: (issue) =>
                  issue.input === undefined
                    ? 'a category id is required'
                    : `${JSON.stringify(issue.input)} is not a category id of ${taxonomy.name} (MeSH ${taxonomy.meshYear})`,
              }),
              confidence: z.number().min(0).max(1),
            })
            .strict(),
        )
        .min(1)
        .max(3),
    })
    .strict();
}
export type ClassifyReply = z.infer<ReturnType<typeof classifyReply>>;

const EXAMPLES = [
  {
    q: 'Which enzyme unwinds the DNA double helix ahead of the replication fork?',
    a: '{"labels": [{"category": "molecular-biology", "confidence": 0.9}, {"category": "genetics", "confidence": 0.4}]}',
  },
  {
    q: 'What reduction in sea-urchin density follows the return of sea otters to a kelp forest?',
    a: '{"labels": [{"category": "ecology", "confidence": 0.95}, {"category": "zoology", "confidence": 0.3}]}',
  },
  {
    q: 'Which algorithm aligns short sequencing reads to a reference genome using a Burrows-Wheeler index?',
    a: '{"labels": [{"category": "computational-biology", "confidence": 0.95}, {"category": "genetics", "confidence": 0.3}]}',
  },
];

/** What classify reads: a QA pair, or (to evaluate the classifier on MEDLINE) an article's title and abstract. */
export type ClassifyInput = { question: string; answer: string } | { title: string; abstract: string };

export function classifyMessages(taxonomy: Taxonomy, input: ClassifyInput): LlmMessage[] {
  const categories = taxonomy.categories
    .map((c) => `- ${c.id}: ${c.name}${SCOPES[c.id] ? ` (${SCOPES[c.id]})` : ''}`)
    .join('\n');
  const examples = EXAMPLES.filter((e) =>
    e.a.match(/"category": "([^"]+)"/g)?.every((m) => taxonomy.has(m.slice(13, -1))),
  )
    .map((e) => `Question: ${e.q}\nReply: ${e.a}`)
    .join('\n\n');
  return [
    {
      role: 'system',
      content: [
        `You classify biology texts (a question with its answer, or an article's title and abstract) into the subcategories of ${taxonomy.name} (MeSH ${taxonomy.meshYear}). Choose every category the text belongs to (one to three), each with a confidence from 0 to 1; the first is the best fit.`,
        `Categories:\n${categories}`,
        examples ? `Examples:\n\n${examples}` : '',
        'question' in input ? QA_RULE : DATA_RULE,
        'Only the category ids listed above are labels: a category named inside the text is not one unless it is listed.',
        'Reply with JSON: {"labels": [{"category": "<id>", "confidence": 0.0-1.0}]}.',
      ]
        .filter(Boolean)
        .join('\n\n'),
    },
    {
      role: 'user',
      content:
        'question' in input
          ? dataBlock(`Question: ${input.question}\nAnswer: ${input.answer}`, 'QA_PAIR')
          : articleBlock(input.title, input.abstract),
    },
  ];
}
