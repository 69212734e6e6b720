package dcat

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"meridian/internal/auth"
	"meridian/internal/rdf"
)

// Report is a validation report of a feed against its profile's shapes: the violations, each
// saying what to change in the record (warnings and infos of the shapes are not errors).
type Report struct {
	Schema     string // the profile: dcat-ap-3, geodcat-ap-3, dcat-us-3
	Valid      bool
	ErrorCount int
	Errors     []Error
}

// Error is one violation.
type Error struct {
	Path       string // the property, abbreviated (dct:description)
	SchemaPath string // the shape that failed (sh:sourceShape)
	Validator  string // the constraint component (sh:MinCountConstraintComponent)
	Message    string // what to fix, in the record's terms
	FocusNode  string // the node that failed: an IRI, or _:label of a blank node
	Value      *string
	DatasetID  *uuid.UUID // the record the node describes; nil for the catalog itself
}

// ValidateCatalog validates the catalog page the caller would get, record by record.
func (s *Service) ValidateCatalog(ctx context.Context, p auth.Principal, profile *Profile, root string, limit, offset int) (Report, error) {
	f, err := s.Catalog(ctx, p, profile, root, limit, offset)
	if err != nil {
		return Report{}, err
	}
	return f.validate()
}

// ValidateRecord validates one dataset's document.
func (s *Service) ValidateRecord(ctx context.Context, p auth.Principal, profile *Profile, root string, id uuid.UUID) (Report, error) {
	f, err := s.Record(ctx, p, profile, root, id)
	if err != nil {
		return Report{}, err
	}
	return f.validate()
}

// validate maps the feed as Write does and validates it: each record with the nodes it refers
// to, the catalog with its datasets' types (what its constraints look at). A node shared by
// records (an agent, a concept) is reported once.
func (f *Feed) validate() (Report, error) {
	shapes, err := f.profile.Shapes()
	if err != nil {
		return Report{}, err
	}
	rep := Report{Schema: f.profile.Name, Errors: []Error{}}
	seen := map[string]bool{}
	// The catalog's graph types its datasets for its own constraints; the datasets themselves
	// are validated with their records.
	stubs := map[rdf.Term]bool{}
	add := func(g *graph, results []rdf.Result, dataset *uuid.UUID) {
		for _, r := range results {
			if r.Severity != rdf.Violation || stubs[r.Focus] {
				continue
			}
			key := r.Focus.String() + " " + r.Path + " " + r.Component + " " + r.Shape.Value
			if r.Value != nil {
				key += " " + r.Value.String()
			}
			// Record nodes are each record's own (IRIs of the record, blank labels unique in the
			// document); only shared nodes can fail the same way twice.
			if r.Focus.IsIRI() && g.shared[r.Focus.Value] {
				if seen[key] {
					continue
				}
				seen[key] = true
			}
			rep.Errors = append(rep.Errors, f.error(g, r, dataset))
		}
	}
	m, blanks := mapper{p: f.profile, site: f.site}, 0
	cat := newGraph(&blanks)
	var catNode rdf.Term
	if !f.single {
		catNode = m.Catalog(cat)
	}
	err = f.each(func(e Entry) error {
		g := newGraph(&blanks)
		ds := m.Dataset(g, e)
		id := e.Record.DatasetID
		add(g, shapes.Validate(g.Graph), &id)
		if !f.single {
			cat.add(catNode, dcatNS+"dataset", ds)
			cat.typed(ds, dcatNS+"Dataset")
			stubs[ds] = true
		}
		return nil
	})
	if err != nil {
		return rep, err
	}
	if !f.single {
		add(cat, shapes.Validate(cat.Graph), nil)
	}
	rep.ErrorCount = len(rep.Errors)
	rep.Valid = rep.ErrorCount == 0
	return rep, nil
}

func (f *Feed) error(g *graph, r rdf.Result, dataset *uuid.UUID) Error {
	e := Error{Path: abbreviate(r.Path), SchemaPath: r.Shape.Value, Validator: abbreviate(r.Component), FocusNode: r.Focus.String(),
		DatasetID: dataset}
	if r.Focus.IsIRI() {
		e.FocusNode = r.Focus.Value
	}
	if r.Value != nil {
		v := r.Value.Value
		e.Value = &v
	}
	e.Message = advice(g, r)
	return e
}

// abbreviate writes an IRI with the documents' prefixes.
func abbreviate(iri string) string {
	best := -1
	for i, p := range Prefixes {
		if strings.HasPrefix(iri, p.IRI) && (best < 0 || len(p.IRI) > len(Prefixes[best].IRI)) {
			best = i
		}
	}
	if best < 0 {
		return iri
	}
	return Prefixes[best].Name + ":" + strings.TrimPrefix(iri, Prefixes[best].IRI)
}

// classOf is the focus node's kind, as a reader of the record knows it.
func classOf(g *graph, focus rdf.Term) string {
	for _, t := range g.Objects(focus, rdf.Type) {
		switch t.Value {
		case dcatNS + "Catalog":
			return "catalog"
		case dcatNS + "Dataset":
			return "dataset"
		case dcatNS + "Distribution":
			return "distribution"
		case dcatNS + "DataService":
			return "data service"
		case vcardNS + "Kind":
			return "contact"
		case foafNS + "Agent":
			return "agent"
		}
	}
	return "node"
}

// fixes say what to change in the record for the violations a record can cause, by the kind of
// node, the property and the constraint.
var fixes = map[string]string{
	"dataset dct:title MinCount":              "add a title to the dataset",
	"dataset dct:description MinCount":        "add a description: set the dataset's summary",
	"dataset dct:publisher MinCount":          "add a publisher: a contact with role publisher, the dataset's source_organization, or the setting dcat.publisher_name",
	"data service dcat:contactPoint MinCount": "add a contact to the dataset: its data services need one to answer for them",
	"contact vcard:hasEmail MinCount":         "add an e-mail address to the contact",
	"contact vcard:fn MinCount":               "give the contact a name or an organization",
	"catalog dcat:dataset MinCount":           "the catalog page holds no dataset: publish one the caller may see, or ask an earlier page",
	"catalog dct:title MinCount":              "set the setting dcat.catalog_title",
	"catalog dct:description MinCount":        "set the setting dcat.catalog_description",
	"catalog dct:publisher MinCount":          "set the setting dcat.publisher_name",
	"distribution dcat:accessURL MinCount":    "give the distribution a URL",
	"agent foaf:name MinCount":                "name the agent",
}

// advice is a result's message: the fix in the record's terms where one is known, else what
// the shape asks in its own terms.
func advice(g *graph, r rdf.Result) string {
	kind := classOf(g, r.Focus)
	component := strings.TrimSuffix(strings.TrimPrefix(r.Component, rdf.SHNS), "ConstraintComponent")
	what := kind
	if kind == "contact" {
		if fn := g.Objects(r.Focus, vcardNS+"fn"); len(fn) > 0 {
			what = fmt.Sprintf("contact %q", fn[0].Value)
		}
	}
	if fix, ok := fixes[kind+" "+abbreviate(r.Path)+" "+component]; ok {
		if what != kind {
			return fix + " (" + what + ")"
		}
		return fix
	}
	switch component {
	case "MinCount":
		return fmt.Sprintf("add %s to the %s: the profile asks at least %s", abbreviate(r.Path), what, r.Detail)
	case "MaxCount":
		return fmt.Sprintf("the %s has too many %s: the profile allows at most %s", what, abbreviate(r.Path), r.Detail)
	}
	value := ""
	if r.Value != nil {
		value = " " + r.Value.String()
	}
	return fmt.Sprintf("the %s's %s%s must be %s", what, abbreviate(r.Path), value, abbreviate(r.Detail))
}
