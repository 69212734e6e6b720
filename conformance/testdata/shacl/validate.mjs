// Validates served feed documents against SHACL shapes with a real SHACL engine
// (rdf-validate-shacl), offline: JSON-LD is converted to RDF by jsonld.js with a document
// loader that refuses every remote context, Turtle read by n3, RDF/XML by
// rdfxml-streaming-parser. Prints one report per document as JSON:
//   [{file, triples, conforms, results: [{focus, path, component, severity, shape, value}]}]
//
//   node validate.mjs --shapes a.ttl,b.ttl [--format jsonld|turtle|rdfxml] [--quads] doc...
// --quads also prints each document's triples as sorted N-Triples-like lines (to compare the
// serializations of one document).
import fs from 'node:fs';
import { Parser, Store, Writer } from 'n3';
import jsonld from 'jsonld';
import { RdfXmlParser } from 'rdfxml-streaming-parser';
import SHACLValidator from 'rdf-validate-shacl';

const args = process.argv.slice(2);
let shapeFiles = [], format = 'jsonld', quads = false;
const docs = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--shapes') shapeFiles = args[++i].split(',');
  else if (args[i] === '--format') format = args[++i];
  else if (args[i] === '--quads') quads = true;
  else docs.push(args[i]);
}

const offline = async (url) => { throw new Error(`refusing to load ${url}: validation is offline`); };

async function read(file) {
  const text = fs.readFileSync(file, 'utf8');
  if (format === 'turtle') return new Parser({ format: 'text/turtle' }).parse(text);
  if (format === 'rdfxml') {
    return new Promise((resolve, reject) => {
      const out = [];
      const p = new RdfXmlParser();
      p.on('data', (q) => out.push(q)).on('error', reject).on('end', () => resolve(out));
      p.write(text);
      p.end();
    });
  }
  const nquads = await jsonld.toRDF(JSON.parse(text), { format: 'application/n-quads', documentLoader: offline, safe: true });
  return new Parser({ format: 'application/n-quads' }).parse(nquads);
}

const term = (t) => (t ? (t.termType === 'BlankNode' ? '_:' + t.value : t.value) : null);

const shapes = new Store();
for (const f of shapeFiles) shapes.addQuads(new Parser().parse(fs.readFileSync(f, 'utf8')));
const validator = new SHACLValidator(shapes, { importGraph: async () => new Store() });

const out = [];
for (const file of docs) {
  const data = await read(file);
  const report = await validator.validate(new Store(data));
  const entry = {
    file, triples: data.length, conforms: report.conforms,
    results: report.results.map((r) => ({
      focus: term(r.focusNode), path: term(r.path), component: term(r.sourceConstraintComponent),
      severity: term(r.severity), shape: term(r.sourceShape), value: term(r.value),
    })),
  };
  if (quads) {
    const w = new Writer({ format: 'N-Triples' });
    entry.quads = data.map((q) => w.quadToString(q.subject, q.predicate, q.object).trim()).sort();
  }
  out.push(entry);
}
process.stdout.write(JSON.stringify(out));
