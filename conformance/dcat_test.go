package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// dcatProfile is a profile's paths and the shape files the engine is given.
type dcatProfile struct {
	name, catalog, record, validation string // record and validation with %s for the dataset id
	shapes                            []string
}

var dcatProfiles = []dcatProfile{
	{"dcat-ap-3", "/datasets/dcat/", "/datasets/%s/dcat/", "/datasets/dcat/validation/", []string{"dcat-ap-3-SHACL.ttl", "dcat-ap-3-ranges.ttl"}},
	{"geodcat-ap-3", "/datasets/geodcat-ap/", "/datasets/%s/geodcat-ap/", "/datasets/geodcat-ap/validation/", []string{"geodcat-ap-3-SHACL.ttl"}},
	{"dcat-us-3", "/datasets/dcat-us/3.0/", "/datasets/%s/dcat-us/3.0/", "/datasets/dcat-us/3.0/validation/", []string{"dcat-us-3-SHACL.ttl"}},
}

// recordValidation is the record validation path of a profile.
func (p dcatProfile) recordValidation(id string) string {
	return fmt.Sprintf(p.record, id) + "validation/"
}

// dcatFixture: one record built to exercise every row of the mapping, one bare record, and a
// private and a draft one (bare too, so they would fail validation if anyone saw them).
type dcatFixture struct {
	owner, viewer          session
	full, minimal          string
	private, draft, raster string
}

func newDcatFixture(t *testing.T) dcatFixture {
	t.Helper()
	f := dcatFixture{owner: newUser(t, "editor"), viewer: newUser(t, "viewer")}
	who := bearer(f.owner.Access)
	f.full = publishedImport(t, f.owner, "Harbour depths "+randomHex(3), 4)
	wantStatus(t, "metadata", call(t, "PATCH", "/datasets/"+f.full, map[string]any{"summary": "Soundings of the harbour basin.",
		"license": "CC BY 4.0", "attribution": "© Port Authority", "usage_constraints": "No commercial use",
		"access_constraints": "None", "lineage_summary": "Imported from the 2019 survey.", "quality_statement": "Checked against the survey.",
		"update_frequency": "annually", "language": "en", "theme_category": []string{"oceans", "transportation"},
		"data_vintage_start": "2019-01-01", "data_vintage_end": "2019-12-31", "source_organization": "Port Authority"}, who...), 200)
	for _, c := range []map[string]any{
		{"role": "pointOfContact", "name": "Ada Lovelace", "organization": "Harbour Office", "email": "ada@example.org", "phone": "+44 20 7946 0000"},
		{"role": "publisher", "organization": "Port Authority", "email": "data@port.example"},
		{"role": "author", "name": "Grace Hopper", "email": "grace@example.org"},
		{"role": "custodian", "organization": "Survey Department", "email": "survey@example.org"},
	} {
		wantStatus(t, "contact", call(t, "POST", "/records/"+f.full+"/contacts/", c, who...), 201)
	}
	for _, k := range []map[string]any{{"keyword": "harbour"}, {"keyword": "Hydrography", "vocabulary_uri": "http://inspire.ec.europa.eu/theme"},
		{"keyword": "ENVI", "vocabulary_uri": "http://publications.europa.eu/resource/authority/data-theme"}} {
		wantStatus(t, "keyword", call(t, "POST", "/records/"+f.full+"/keywords/", k, who...), 201)
	}
	wantStatus(t, "translation", call(t, "PUT", "/records/"+f.full+"/translations/nl/", map[string]any{"title": "Havendiepten",
		"summary": "Lodingen van het havenbekken."}, who...), 200)
	wantStatus(t, "own distribution", call(t, "POST", "/records/"+f.full+"/distributions/", map[string]any{"distribution_type": "access",
		"format": "WMS", "url": "https://maps.example.org/wms?layer=harbour", "title": "Harbour WMS", "media_type": "application/vnd.ogc.wms_xml"}, who...), 201)
	f.minimal = createDataset(t, f.owner, "public", true)["id"].(string)
	f.private = createDataset(t, f.owner, "private", true)["id"].(string)
	f.draft = createDataset(t, f.owner, "public", false)["id"].(string)
	return f
}

// shaclRun runs the SHACL engine (conformance/testdata/shacl/validate.mjs) over documents.
type shaclReport struct {
	File     string
	Triples  int
	Conforms bool
	Results  []struct{ Focus, Path, Component, Severity, Shape, Value string }
	Quads    []string
}

func shaclRun(t *testing.T, profile dcatProfile, format string, quads bool, docs ...[]byte) []shaclReport {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	var shapes []string
	for _, s := range profile.shapes {
		shapes = append(shapes, filepath.Join(root, "internal", "dcat", "shapes", s))
	}
	args := []string{filepath.Join(root, "conformance", "testdata", "shacl", "validate.mjs"), "--shapes", strings.Join(shapes, ","), "--format", format}
	if quads {
		args = append(args, "--quads")
	}
	dir := t.TempDir()
	for i, d := range docs {
		name := filepath.Join(dir, fmt.Sprintf("doc%d", i))
		if err := os.WriteFile(name, d, 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, name)
	}
	cmd := exec.Command("node", args...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("SHACL engine: %v\n%s", err, tail(stderr.String(), 4000))
	}
	var reps []shaclReport
	if err := json.Unmarshal(out, &reps); err != nil {
		t.Fatalf("SHACL engine output: %v\n%s", err, tail(string(out), 2000))
	}
	return reps
}

// violations are a report's violations as comparable keys: the focus node (an IRI; blank nodes
// are labelled differently by every reader), the property and the constraint component.
func (r shaclReport) violations() []string {
	var out []string
	for _, v := range r.Results {
		if !strings.HasSuffix(v.Severity, "#Violation") {
			continue
		}
		focus := v.Focus
		if strings.HasPrefix(focus, "_:") {
			focus = "_:"
		}
		out = append(out, focus+" "+v.Path+" "+strings.TrimPrefix(v.Component, "http://www.w3.org/ns/shacl#"))
	}
	sort.Strings(out)
	return out
}

// serverViolations are the server's report's errors as the same keys.
func serverViolations(t *testing.T, rep map[string]any) []string {
	t.Helper()
	prefixes := map[string]string{"dct:": "http://purl.org/dc/terms/", "dcat:": "http://www.w3.org/ns/dcat#",
		"vcard:": "http://www.w3.org/2006/vcard/ns#", "foaf:": "http://xmlns.com/foaf/0.1/", "skos:": "http://www.w3.org/2004/02/skos/core#",
		"locn:": "http://www.w3.org/ns/locn#", "dcatus:": "http://data.resources.gov/ontology/dcat-us#", "dqv:": "http://www.w3.org/ns/dqv#",
		"adms:": "http://www.w3.org/ns/adms#", "sh:": "http://www.w3.org/ns/shacl#"}
	expand := func(s string) string {
		for p, ns := range prefixes {
			if strings.HasPrefix(s, p) {
				return ns + strings.TrimPrefix(s, p)
			}
		}
		return s
	}
	var out []string
	errs, _ := rep["errors"].([]any)
	for _, e := range errs {
		m := e.(map[string]any)
		focus := m["focus_node"].(string)
		if strings.HasPrefix(focus, "_:") {
			focus = "_:"
		}
		out = append(out, focus+" "+expand(m["path"].(string))+" "+strings.TrimPrefix(expand(m["validator"].(string)), "http://www.w3.org/ns/shacl#"))
		if m["message"] == "" {
			t.Errorf("an error without a message: %v", m)
		}
	}
	sort.Strings(out)
	if rep["error_count"].(float64) != float64(len(out)) || rep["valid"] != (len(out) == 0) {
		t.Errorf("report counts: error_count %v, valid %v, %d errors", rep["error_count"], rep["valid"], len(out))
	}
	return out
}

// Every mapping row of a fully populated record conforms to the official shapes of all three
// profiles, by the real SHACL engine over the served JSON-LD, and the server's report agrees; a
// bare record fails exactly where the server's report says (same count, same properties), for
// its record document and for the whole catalog page.
func TestDCATFeedsAgreeWithSHACL(t *testing.T) {
	f := newDcatFixture(t)
	who := bearer(f.owner.Access)
	for _, p := range dcatProfiles {
		t.Run(p.name, func(t *testing.T) {
			full := call(t, "GET", fmt.Sprintf(p.record, f.full), nil)
			minimal := call(t, "GET", fmt.Sprintf(p.record, f.minimal), nil)
			// The catalog page and its report, both of one caller (a viewer: public and internal,
			// published records of everyone's, none of the owner's private or draft ones).
			cat := call(t, "GET", p.catalog, nil, bearer(f.viewer.Access)...)
			for _, r := range []reply{full, minimal, cat} {
				if r.Status != 200 || r.Header.Get("Content-Type") != "application/ld+json" {
					t.Fatalf("feed: %d %s %s", r.Status, r.Header.Get("Content-Type"), tail(string(r.Body), 500))
				}
			}
			reps := shaclRun(t, p, "jsonld", false, full.Body, minimal.Body, cat.Body)
			if !reps[0].Conforms || len(reps[0].Results) != 0 {
				t.Errorf("the full record does not conform: %v", reps[0].Results)
			}
			if got := serverViolations(t, call(t, "GET", p.recordValidation(f.full), nil, who...).JSON(t)); len(got) != 0 {
				t.Errorf("the server finds violations in the full record: %v", got)
			}
			engine, server := reps[1].violations(), serverViolations(t, call(t, "GET", p.recordValidation(f.minimal), nil, who...).JSON(t))
			if len(engine) == 0 || !slices.Equal(engine, server) {
				t.Errorf("bare record: engine %v\nserver %v", engine, server)
			}
			engine = reps[2].violations()
			rep := call(t, "GET", p.validation, nil, bearer(f.viewer.Access)...).JSON(t)
			if server := serverViolations(t, rep); !slices.Equal(engine, server) {
				t.Errorf("catalog: engine %d %v\nserver %d %v", len(engine), engine, len(server), server)
			}
			if !strings.Contains(string(full.Body), "Havendiepten") || !strings.Contains(string(full.Body), "Hydrography") {
				t.Errorf("the full record lacks its translation or its INSPIRE theme")
			}
		})
	}
}

// datasetIDsIn are the dataset ids a document or report names, of those asked.
func datasetIDsIn(body []byte, ids ...string) []string {
	var out []string
	for _, id := range ids {
		if bytes.Contains(body, []byte(id)) {
			out = append(out, id)
		}
	}
	return out
}

// hydraTotal is the totalItems of a catalog page's Hydra view (a page of one record).
func hydraTotal(t *testing.T, body []byte) float64 {
	t.Helper()
	var doc struct {
		Graph []map[string]any `json:"@graph"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	for _, n := range doc.Graph {
		if v, ok := n["hydra:totalItems"].(map[string]any); ok {
			var total float64
			fmt.Sscan(v["@value"].(string), &total)
			return total
		}
	}
	t.Fatalf("no hydra:totalItems in %s", tail(string(body), 400))
	return 0
}

// Private and draft records never appear in a feed or a report of a caller who may not read
// them, counts included; their record documents and reports answer 404 (reports need a sign-in).
func TestDCATVisibility(t *testing.T) {
	f := newDcatFixture(t)
	stranger := newUser(t, "editor")
	hidden := []string{f.private, f.draft}
	for _, p := range dcatProfiles {
		callers := map[string][]string{"anonymous": nil, "viewer": bearer(f.viewer.Access), "stranger": bearer(stranger.Access)}
		for name, who := range callers {
			page := call(t, "GET", p.catalog, nil, who...)
			if got := datasetIDsIn(page.Body, hidden...); len(got) > 0 || page.Status != 200 {
				t.Errorf("%s %s: %d, shows %v", p.name, name, page.Status, got)
			}
			if len(datasetIDsIn(page.Body, f.full, f.minimal)) != 2 {
				t.Errorf("%s %s: the public records are missing", p.name, name)
			}
			for _, id := range hidden {
				if r := call(t, "GET", fmt.Sprintf(p.record, id), nil, who...); r.Status != 404 {
					t.Errorf("%s %s: record %s answers %d", p.name, name, id, r.Status)
				}
			}
			if name == "anonymous" {
				wantStatus(t, "anonymous report", call(t, "GET", p.validation, nil), 401)
				continue
			}
			rep := call(t, "GET", p.validation, nil, who...)
			if got := datasetIDsIn(rep.Body, hidden...); len(got) > 0 || rep.Status != 200 {
				t.Errorf("%s %s report: %d, names %v", p.name, name, rep.Status, got)
			}
			for _, id := range hidden {
				if r := call(t, "GET", p.recordValidation(id), nil, who...); r.Status != 404 {
					t.Errorf("%s %s: report of %s answers %d", p.name, name, id, r.Status)
				}
			}
		}
		// Counts: the owner's catalog counts the private and draft records, a stranger's does not.
		mine := hydraTotal(t, call(t, "GET", p.catalog+"?limit=1", nil, bearer(f.owner.Access)...).Body)
		theirs := hydraTotal(t, call(t, "GET", p.catalog+"?limit=1", nil, bearer(stranger.Access)...).Body)
		if mine-theirs < 2 {
			t.Errorf("%s: the owner counts %v records, a stranger %v", p.name, mine, theirs)
		}
		own := call(t, "GET", p.validation, nil, bearer(f.owner.Access)...)
		if got := datasetIDsIn(own.Body, hidden...); len(got) != 2 {
			t.Errorf("%s: the owner's report does not cover the private and draft records (%v)", p.name, got)
		}
	}
}

// Content negotiation: format wins over Accept; Accept chooses by quality among JSON-LD,
// application/json, Turtle and RDF/XML, and falls back to JSON-LD; every serialization holds the
// same triples; HEAD answers the headers.
func TestDCATNegotiation(t *testing.T) {
	f := newDcatFixture(t)
	p := dcatProfiles[1]
	path := fmt.Sprintf(p.record, f.full)
	cases := []struct{ query, accept, want, engine string }{
		{"", "", "application/ld+json", "jsonld"},
		{"", "application/json", "application/json", "jsonld"},
		{"", "text/turtle", "text/turtle", "turtle"},
		{"", "application/rdf+xml;q=0.9, text/turtle;q=0.5", "application/rdf+xml", "rdfxml"},
		{"", "text/html, */*;q=0.1", "application/ld+json", "jsonld"},
		{"", "text/html", "application/ld+json", "jsonld"},
		{"?format=turtle", "application/rdf+xml", "text/turtle", "turtle"},
		{"?format=rdfxml", "", "application/rdf+xml", "rdfxml"},
		{"?format=jsonld", "text/turtle", "application/ld+json", "jsonld"},
	}
	var quads []string
	for _, c := range cases {
		r := call(t, "GET", path+c.query, nil, "Accept", c.accept)
		if r.Status != 200 || r.Header.Get("Content-Type") != c.want {
			t.Errorf("%s Accept %q: %d %s, want %s", c.query, c.accept, r.Status, r.Header.Get("Content-Type"), c.want)
			continue
		}
		rep := shaclRun(t, p, c.engine, true, r.Body)[0]
		if !rep.Conforms {
			t.Errorf("%s Accept %q: does not conform: %v", c.query, c.accept, rep.Results)
		}
		if quads == nil {
			quads = rep.Quads
		} else if !slices.Equal(blankless(quads), blankless(rep.Quads)) {
			t.Errorf("%s Accept %q: %d triples, JSON-LD had %d", c.query, c.accept, len(rep.Quads), len(quads))
		}
	}
	head := call(t, "HEAD", p.catalog, nil, "Accept", "text/turtle")
	if head.Status != 200 || head.Header.Get("Content-Type") != "text/turtle" || len(head.Body) != 0 {
		t.Errorf("HEAD: %d %s %d bytes", head.Status, head.Header.Get("Content-Type"), len(head.Body))
	}
	wantStatus(t, "unknown format", call(t, "GET", path+"?format=csv", nil), 422)
}

// blankless are triples with blank node labels blanked: readers label them differently.
func blankless(quads []string) []string {
	out := make([]string, len(quads))
	for i, q := range quads {
		fields := strings.Fields(q)
		for j, f := range fields {
			if strings.HasPrefix(f, "_:") {
				fields[j] = "_:"
			}
		}
		out[i] = strings.Join(fields, " ")
	}
	sort.Strings(out)
	return out
}

// Pages: limit and offset walk the catalog in title order without repeats, each page but the
// whole catalog carrying its Hydra links; a limit above 10000 is clamped.
func TestDCATPaging(t *testing.T) {
	newDcatFixture(t)
	p := dcatProfiles[0]
	all := call(t, "GET", p.catalog+"?limit=20000", nil).Body
	total := hydraOrCount(t, all)
	seen := map[string]bool{}
	for offset := 0; offset < int(total); offset += 2 {
		page := call(t, "GET", fmt.Sprintf("%s?limit=2&offset=%d", p.catalog, offset), nil)
		ids := datasetsOf(t, page.Body)
		if len(ids) == 0 || len(ids) > 2 || hydraTotal(t, page.Body) != total {
			t.Fatalf("page at %d: %v of %v", offset, ids, total)
		}
		for _, id := range ids {
			if seen[id] {
				t.Errorf("%s on two pages", id)
			}
			seen[id] = true
		}
		if !strings.Contains(string(page.Body), "hydra:first") || (offset+2 < int(total)) != strings.Contains(string(page.Body), "hydra:next") {
			t.Errorf("page at %d: hydra links %s", offset, tail(string(page.Body), 300))
		}
	}
	if len(seen) != int(total) {
		t.Errorf("pages gave %d datasets of %v", len(seen), total)
	}
}

// hydraOrCount is a whole catalog's count: it has no Hydra view, so its datasets are counted.
func hydraOrCount(t *testing.T, body []byte) float64 {
	t.Helper()
	if strings.Contains(string(body), "hydra:totalItems") {
		t.Fatalf("the whole catalog carries a partial view")
	}
	return float64(len(datasetsOf(t, body)))
}

// datasetsOf are the ids of a JSON-LD feed's datasets, in document order.
func datasetsOf(t *testing.T, body []byte) []string {
	t.Helper()
	var doc struct {
		Graph []map[string]any `json:"@graph"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range doc.Graph {
		if n["@type"] == "dcat:Dataset" {
			out = append(out, n["dct:identifier"].(string))
		}
	}
	return out
}

// The shapes the server embeds are the official ones of ../shared/data, byte for byte.
func TestDCATShapesAreTheOfficialOnes(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(root, "..", "shared", "data", "shacl")
	for embedded, official := range map[string]string{"dcat-ap-3-SHACL.ttl": "dcat-ap-3/shacl/dcat-ap-SHACL.ttl",
		"dcat-ap-3-ranges.ttl": "dcat-ap-3/shacl/ranges.ttl", "geodcat-ap-3-SHACL.ttl": "geodcat-ap-3/shacl/geodcat-ap-SHACL.ttl",
		"dcat-us-3-SHACL.ttl": "dcat-us-3/shacl/dcat-us_3.0_shacl_shapes.ttl"} {
		a, err := os.ReadFile(filepath.Join(root, "internal", "dcat", "shapes", embedded))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(data, official))
		if err != nil {
			t.Skipf("the shared shapes are not here: %v", err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs from %s", embedded, official)
		}
	}
	// The engine is not asleep: the shared invalid fixture fails, the valid one passes.
	for _, p := range dcatProfiles {
		valid, _ := os.ReadFile(filepath.Join(data, "fixtures", "minimal-valid.ttl"))
		invalid, _ := os.ReadFile(filepath.Join(data, "fixtures", "minimal-invalid-no-title.ttl"))
		reps := shaclRun(t, p, "turtle", false, valid, invalid)
		if !reps[0].Conforms || reps[1].Conforms || len(reps[1].violations()) != 1 {
			t.Errorf("%s: fixtures give %v and %v", p.name, reps[0].violations(), reps[1].violations())
		}
	}
}
