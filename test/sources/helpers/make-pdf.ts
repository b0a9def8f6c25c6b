/**
 * Writes a small valid PDF by hand (Helvetica text, one content stream per page), so the PDF
 * reader is tested on real PDF syntax without a binary fixture of unknown origin.
 */
export interface PdfLine {
  text: string;
  size?: number;
}

const esc = (s: string) => s.replace(/\\/g, '\\\\').replace(/\(/g, '\\(').replace(/\)/g, '\\)');

export function makePdf(pages: PdfLine[][], info: { title?: string } = {}): Buffer {
  const objects: string[] = [];
  const add = (body: string) => {
    objects.push(body);
    return objects.length;
  };
  const catalog = add('');
  const pagesObj = add('');
  const font = add('<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>');
  const kids: number[] = [];
  for (const lines of pages) {
    let y = 740;
    const ops: string[] = [];
    for (const line of lines) {
      const size = line.size ?? 11;
      if (line.text === '') {
        y -= size * 1.2; // a blank line: the paragraph gap readers look for
        continue;
      }
      ops.push(`BT /F1 ${size} Tf 72 ${y.toFixed(1)} Td (${esc(line.text)}) Tj ET`);
      y -= size * 1.35;
    }
    const stream = ops.join('\n');
    const content = add(`<< /Length ${Buffer.byteLength(stream, 'latin1')} >>\nstream\n${stream}\nendstream`);
    kids.push(
      add(
        `<< /Type /Page /Parent ${pagesObj} 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 ${font} 0 R >> >> /Contents ${content} 0 R >>`,
      ),
    );
  }
  objects[catalog - 1] = `<< /Type /Catalog /Pages ${pagesObj} 0 R >>`;
  objects[pagesObj - 1] =
    `<< /Type /Pages /Kids [${kids.map((k) => `${k} 0 R`).join(' ')}] /Count ${kids.length} >>`;
  const infoObj = info.title ? add(`<< /Title (${esc(info.title)}) /Producer (bioalchemy test) >>`) : null;

  let out = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((body, i) => {
    offsets.push(Buffer.byteLength(out, 'latin1'));
    out += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = Buffer.byteLength(out, 'latin1');
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const o of offsets) out += `${String(o).padStart(10, '0')} 00000 n \n`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root ${catalog} 0 R${infoObj ? ` /Info ${infoObj} 0 R` : ''} >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}

/** The committed fixture test/fixtures/sources/pdf/coral-bleaching.pdf is exactly makePdf(CORAL_PAGES, CORAL_INFO). */
export const CORAL_INFO = { title: 'Microsoft Word - coral_final_v3.docx' };
export const CORAL_PAGES: PdfLine[][] = [
  [
    { text: 'Thermal stress and symbiont loss in reef-building corals', size: 18 },
    { text: 'Ana Reyes, Tom Lee' },
    { text: 'https://doi.org/10.5555/coral.2020.17.' },
    { text: '' },
    { text: 'Abstract', size: 13 },
    { text: 'Corals expel their algal symbionts when water stays 1 °C above the' },
    { text: 'summer maximum for four weeks.' },
    { text: '' },
    { text: '1. Introduction', size: 13 },
    { text: 'Coral bleaching is the loss of Symbiodiniaceae from coral tis-' },
    { text: 'sue. It has become more frequent as oceans warm.' },
    { text: '' },
    { text: 'Mass bleaching events now recur every six years on average.' },
    { text: '' },
    { text: '1' },
  ],
  [
    { text: '2. Results', size: 13 },
    { text: 'Colonies of Acropora bleached first, after 3.2 degree heating weeks.' },
    { text: '' },
    { text: 'References', size: 13 },
    { text: '1. Hughes TP. Global warming and coral bleaching. 2017.' },
  ],
];
