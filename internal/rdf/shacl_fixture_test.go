package rdf

import (
	"os"
	"path/filepath"
	"testing"
)

func TestOfficialFixturesScratch(t *testing.T) {
	data := "../../../shared/data/shacl"
	sets := map[string][]string{
		"dcat-ap":    {"dcat-ap-3/shacl/dcat-ap-SHACL.ttl", "dcat-ap-3/shacl/ranges.ttl"},
		"geodcat-ap": {"geodcat-ap-3/shacl/geodcat-ap-SHACL.ttl"},
		"dcat-us":    {"dcat-us-3/shacl/dcat-us_3.0_shacl_shapes.ttl"},
	}
	for name, files := range sets {
		g := NewGraph()
		for _, f := range files {
			src, err := os.ReadFile(filepath.Join(data, f))
			if err != nil {
				t.Fatal(err)
			}
			h, err := ParseTurtle(string(src), f)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %d triples", f, h.Len())
			g.AddAll(h)
		}
		shapes, err := CompileShapes(g)
		if err != nil {
			t.Fatal(name, err)
		}
		for _, fx := range []string{"fixtures/minimal-valid.ttl", "fixtures/minimal-invalid-no-title.ttl", "dcat-us-3/examples/dataset.ttl", "geodcat-ap-3/examples/dataset.ttl"} {
			src, _ := os.ReadFile(filepath.Join(data, fx))
			d, err := ParseTurtle(string(src), "d")
			if err != nil {
				t.Fatal(err)
			}
			res := shapes.Validate(d)
			t.Logf("%s %s: %d results", name, fx, len(res))
			for _, r := range res {
				if fx == "fixtures/minimal-invalid-no-title.ttl" || len(res) < 5 {
					t.Logf("   %v %s %s", r.Focus, r.Path, r.Component)
				}
			}
		}
	}
}
