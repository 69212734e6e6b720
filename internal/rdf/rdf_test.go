package rdf

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// shapesOf reads and compiles shape files of ../shared/data/shacl.
func shapesOf(t *testing.T, files ...string) *Shapes {
	t.Helper()
	g := NewGraph()
	for _, f := range files {
		src, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "data", "shacl", f))
		if err != nil {
			t.Skipf("the shared shapes are not here: %v", err)
		}
		h, err := ParseTurtle(string(src), filepath.Base(f))
		if err != nil {
			t.Fatal(err)
		}
		g.AddAll(h)
	}
	s, err := CompileShapes(g)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func violations(rs []Result) []Result {
	var out []Result
	for _, r := range rs {
		if r.Severity == Violation {
			out = append(out, r)
		}
	}
	return out
}

// The official shapes give the results ../shared/data/README.md records for its fixtures and
// examples (checked there with rdf-validate-shacl).
func TestOfficialShapesOnTheSharedFixtures(t *testing.T) {
	sets := map[string][]string{
		"dcat-ap":    {"dcat-ap-3/shacl/dcat-ap-SHACL.ttl", "dcat-ap-3/shacl/ranges.ttl"},
		"geodcat-ap": {"geodcat-ap-3/shacl/geodcat-ap-SHACL.ttl"},
		"dcat-us":    {"dcat-us-3/shacl/dcat-us_3.0_shacl_shapes.ttl"},
	}
	want := map[string]map[string]int{
		"dcat-ap":    {"fixtures/minimal-valid.ttl": 0, "fixtures/minimal-invalid-no-title.ttl": 1},
		"geodcat-ap": {"fixtures/minimal-valid.ttl": 0, "fixtures/minimal-invalid-no-title.ttl": 1, "geodcat-ap-3/examples/dataset.ttl": 19},
		"dcat-us": {"fixtures/minimal-valid.ttl": 0, "fixtures/minimal-invalid-no-title.ttl": 1, "dcat-us-3/examples/dataset.ttl": 0,
			"dcat-us-3/examples/catalog.ttl": 0},
	}
	for name, files := range sets {
		shapes := shapesOf(t, files...)
		for fx, n := range want[name] {
			src, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "data", "shacl", fx))
			if err != nil {
				t.Fatal(err)
			}
			d, err := ParseTurtle(string(src), "d")
			if err != nil {
				t.Fatal(err)
			}
			got := violations(shapes.Validate(d))
			if len(got) != n {
				t.Errorf("%s on %s: %d violations, want %d: %v", name, fx, len(got), n, got)
			}
			if strings.Contains(fx, "no-title") && (len(got) != 1 || got[0].Path != "http://purl.org/dc/terms/title" ||
				got[0].Component != SHNS+"MinCountConstraintComponent") {
				t.Errorf("%s: the missing title is reported as %v", name, got)
			}
		}
	}
}

// Shapes using what the evaluator does not know are refused, never half evaluated.
func TestUnsupportedShapesAreRefused(t *testing.T) {
	for _, src := range []string{
		`@prefix sh: <http://www.w3.org/ns/shacl#> . <s> sh:targetClass <C> ; sh:property [ sh:path <p> ; sh:pattern "x" ] .`,
		`@prefix sh: <http://www.w3.org/ns/shacl#> . <s> sh:targetClass <C> ; sh:closed true .`,
		`@prefix sh: <http://www.w3.org/ns/shacl#> . <s> sh:targetClass <C> ; sh:property [ sh:path [ sh:inversePath <p> ] ; sh:minCount 1 ] .`,
	} {
		g, err := ParseTurtle(src, "t")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := CompileShapes(g); err == nil {
			t.Errorf("compiled %s", src)
		}
	}
}

// A graph written as Turtle reads back as the same triples; literals with every escape survive.
func TestTurtleRoundTrip(t *testing.T) {
	g := NewGraph()
	s, b := IRI("http://example.org/s"), Blank("b1")
	g.Add(s, IRI("http://purl.org/dc/terms/title"), LangLiteral("Quote \" back\\slash\nline\ttab é", "en"))
	g.Add(s, IRI("http://example.org/count"), Typed("3.5", XSDNS+"decimal"))
	g.Add(s, IRI("http://example.org/odd#local.name"), IRI("http://example.org/o?q=1&r=<2>"))
	g.Add(s, IRI("http://example.org/has"), b)
	g.Add(b, IRI(Type), IRI("http://example.org/Thing"))
	g.Add(b, IRI("http://example.org/label"), String("inner"))
	var buf bytes.Buffer
	w := NewWriter(&buf, Turtle, Prefixes{{Name: "dct", IRI: "http://purl.org/dc/terms/"}, {Name: "ex", IRI: "http://example.org/"}})
	if err := w.Begin(); err != nil {
		t.Fatal(err)
	}
	_ = w.Write(g)
	_ = w.End()
	back, err := ParseTurtle(buf.String(), "x")
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if back.Len() != g.Len() {
		t.Fatalf("%d triples back, %d written:\n%s", back.Len(), g.Len(), buf.String())
	}
	for _, tr := range g.Triples() {
		if tr.S.IsBlank() || tr.O.IsBlank() {
			continue
		}
		if len(back.Objects(tr.S, tr.P.Value)) == 0 || back.Objects(tr.S, tr.P.Value)[0] != tr.O {
			t.Errorf("%v %v %v came back as %v", tr.S, tr.P, tr.O, back.Objects(tr.S, tr.P.Value))
		}
	}
}
