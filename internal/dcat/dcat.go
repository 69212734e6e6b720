// Package dcat describes the catalog as open-data feeds: DCAT 3 (as DCAT-AP 3 asks), GeoDCAT-AP 3
// and DCAT-US 3.0, each mapped from the same catalog record, streamed as JSON-LD, Turtle or
// RDF/XML, and validated against the profile's official SHACL shapes (embedded, evaluated by
// internal/rdf) into reports that say what to fix in the record. Visibility stays with the
// records query: a feed describes what that query answers the caller, nothing else.
package dcat

import (
	"embed"
	"fmt"
	"sync"

	"meridian/internal/rdf"
)

// Namespaces of the vocabularies the feeds use.
const (
	dcatNS    = "http://www.w3.org/ns/dcat#"
	dctNS     = "http://purl.org/dc/terms/"
	foafNS    = "http://xmlns.com/foaf/0.1/"
	vcardNS   = "http://www.w3.org/2006/vcard/ns#"
	skosNS    = "http://www.w3.org/2004/02/skos/core#"
	locnNS    = "http://www.w3.org/ns/locn#"
	gspNS     = "http://www.opengis.net/ont/geosparql#"
	admsNS    = "http://www.w3.org/ns/adms#"
	provNS    = "http://www.w3.org/ns/prov#"
	dqvNS     = "http://www.w3.org/ns/dqv#"
	oaNS      = "http://www.w3.org/ns/oa#"
	geodcatNS = "http://data.europa.eu/930/"
	dcatusNS  = "http://data.resources.gov/ontology/dcat-us#"
	odrsNS    = "http://schema.theodi.org/odrs#"
	hydraNS   = "http://www.w3.org/ns/hydra/core#"
	orgNS     = "http://www.w3.org/ns/org#"
)

// Prefixes are the namespace abbreviations of every document.
var Prefixes = rdf.Prefixes{
	{Name: "rdf", IRI: rdf.RDFNS}, {Name: "rdfs", IRI: rdf.RDFSNS}, {Name: "xsd", IRI: rdf.XSDNS},
	{Name: "dcat", IRI: dcatNS}, {Name: "dct", IRI: dctNS}, {Name: "foaf", IRI: foafNS}, {Name: "vcard", IRI: vcardNS},
	{Name: "skos", IRI: skosNS}, {Name: "locn", IRI: locnNS}, {Name: "gsp", IRI: gspNS}, {Name: "adms", IRI: admsNS},
	{Name: "prov", IRI: provNS}, {Name: "dqv", IRI: dqvNS}, {Name: "oa", IRI: oaNS}, {Name: "geodcat", IRI: geodcatNS},
	{Name: "dcatus", IRI: dcatusNS}, {Name: "odrs", IRI: odrsNS}, {Name: "hydra", IRI: hydraNS}, {Name: "org", IRI: orgNS},
	{Name: "sh", IRI: rdf.SHNS},
}

// Profile is one of the application profiles the catalog is described in.
type Profile struct {
	Name  string // as reports name it: dcat-ap-3, geodcat-ap-3, dcat-us-3
	Title string
	Path  string // the feed's path under the API root
	files []string
	once  sync.Once
	shape *rdf.Shapes
	err   error
}

// The profiles.
var (
	DCATAP    = &Profile{Name: "dcat-ap-3", Title: "DCAT-AP 3.0.1", Path: "/datasets/dcat/", files: []string{"dcat-ap-3-SHACL.ttl", "dcat-ap-3-ranges.ttl"}}
	GeoDCATAP = &Profile{Name: "geodcat-ap-3", Title: "GeoDCAT-AP 3.0.0", Path: "/datasets/geodcat-ap/", files: []string{"geodcat-ap-3-SHACL.ttl"}}
	DCATUS    = &Profile{Name: "dcat-us-3", Title: "DCAT-US 3.0", Path: "/datasets/dcat-us/3.0/", files: []string{"dcat-us-3-SHACL.ttl"}}
)

// Profiles are every profile.
var Profiles = []*Profile{DCATAP, GeoDCATAP, DCATUS}

//go:embed shapes/*.ttl
var shapeFiles embed.FS

// Shapes are the profile's official shapes, read once.
func (p *Profile) Shapes() (*rdf.Shapes, error) {
	p.once.Do(func() {
		g := rdf.NewGraph()
		for _, f := range p.files {
			src, err := shapeFiles.ReadFile("shapes/" + f)
			if err != nil {
				p.err = err
				return
			}
			h, err := rdf.ParseTurtle(string(src), f)
			if err != nil {
				p.err = err
				return
			}
			g.AddAll(h)
		}
		p.shape, p.err = rdf.CompileShapes(g)
		if p.err != nil {
			p.err = fmt.Errorf("%s shapes: %w", p.Name, p.err)
		}
	})
	return p.shape, p.err
}

// ShapeFiles are the embedded shape files of the profile (for the agreement tests).
func (p *Profile) ShapeFiles() []string { return p.files }
