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
	shapes                                  []string
}

var dcatProfiles = []dcatProfile{
	{"dcat-ap-3", "/datasets/dcat/", "/datasets/%s/dcat/", "/datasets/dcat/validation/", []string{"dcat-ap-3-SHACL.ttl", "dcat-ap-3-ranges.ttl"}},
	{"geodcat-ap-3", "/datasets/geodcat-ap/", "/datasets/%s/geodcat-ap/", "/datasets/geodcat-ap/validation/", []string{"geodcat-ap-3-SHACL.ttl"}},
	{"dcat-us-3", "/datasets/dcat-us/3.0/", "/datasets/%s/dcat-us/3.0/", "/datasets/dcat-us/3.0/validation/", []string{"dcat-us-3-SHACL.ttl"}},
}

// recordValidation is the record validation path of a profile.
func (p dcatProfile) recordValidation(id string) string { return fmt.Sprintf(p.record, id) + "validation/" }

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
