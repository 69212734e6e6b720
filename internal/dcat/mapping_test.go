package dcat

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"

	"meridian/internal/auth"
	"meridian/internal/catalog"
	"meridian/internal/rdf"
	"meridian/internal/settings"
)

func ptr[T any](v T) *T { return &v }

// fullEntry is a record with every field the mapping reads.
func fullEntry() Entry {
	id := uuid.MustParse("2b7f4c3e-1d9a-4b8e-9f10-6a5b4c3d2e1f")
	contacts, _ := json.Marshal([]map[string]any{
		{"name": "Ada Lovelace", "organization": "Harbour Office", "email": "ada@example.org", "phones": []map[string]string{{"value": "+44 20 7946 0000"}}, "roles": []string{"pointOfContact"}},
		{"organization": "Port Authority", "email": "data@port.example", "roles": []string{"publisher"}},
		{"name": "Grace Hopper", "email": "grace@example.org", "roles": []string{"author"}},
		{"organization": "Survey Dept", "email": "survey@example.org", "roles": []string{"custodian"}},
	})
	own, _ := json.Marshal([]map[string]any{{"id": "0e9d8c7b-6a5f-4e3d-2c1b-0a9f8e7d6c5b", "type": "download", "format": "GeoTIFF",
		"url": "https://data.example.org/harbour.tif", "title": "Harbour raster", "media_type": "image/tiff"}})
	quality, _ := json.Marshal(map[string]any{"overall": 91.0, "metadata_completeness": 100.0, "attribute_completeness": 88.5,
		"geometry_validity": 100.0, "crs_defined": 100.0})
	return Entry{
		Record: catalog.Record{ID: uuid.New(), DatasetID: id, Title: "Harbour depths", RecordType: "vector_dataset", RecordStatus: "published",
			Visibility: "public", Summary: ptr("Soundings of the harbour basin."), Language: ptr("en"), License: ptr("CC BY 4.0"),
			Rights: ptr("© Port Authority; No commercial use"), UsageConstraints: ptr("No commercial use"),
			AccessConstraints: ptr("None"), Themes: []string{"oceans", "transportation"},
			Keywords: []string{"oceans", "transportation", "harbour", "Hydrography", "ENVI"}, Created: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC),
			Updated: time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC), VintageStart: pgtype.Date{Time: time.Date(2019, 1, 1, 0, 0, 0, 0, time.UTC), Valid: true},
			VintageEnd: pgtype.Date{Time: time.Date(2019, 12, 31, 0, 0, 0, 0, time.UTC), Valid: true},
			Extent:     []byte(`{"type":"Polygon","coordinates":[[[4.1,51.9],[4.5,51.9],[4.5,52.1],[4.1,52.1],[4.1,51.9]]]}`),
			BBox:       []float64{4.1, 51.9, 4.5, 52.1}, SRID: ptr(int32(4326)), SourceOrganization: ptr("Port Authority"),
			QualityStatement: ptr("Checked against the 2019 survey."), Lineage: ptr("Imported from the harbour survey GeoPackage."),
			UpdateFrequency: ptr("annually"), QualityDetail: quality, Contacts: contacts, Distributions: own,
			TableSchema: "data", TableName: "harbour"},
		Keywords: []catalog.Keyword{{Keyword: "harbour"}, {Keyword: "Hydrography", VocabularyURI: ptr(inspireThemes)},
			{Keyword: "ENVI", VocabularyURI: ptr(euThemes)}},
		Translations: []catalog.Translation{{Language: "nl", Title: "Havendiepten", Summary: ptr("Lodingen van het havenbekken.")}},
	}
}

// minimalEntry is a record with a title and nothing else.
func minimalEntry() Entry {
	return Entry{Record: catalog.Record{ID: uuid.New(), DatasetID: uuid.MustParse("3c8e5d4f-2e0b-4c9f-8a21-7b6c5d4e3f20"), Title: "Bare",
		RecordType: "table", RecordStatus: "published", Visibility: "public", Created: time.Unix(0, 0), Updated: time.Unix(0, 0),
		Contacts: []byte(`[]`), Distributions: []byte(`[]`), TableSchema: "data", TableName: "bare"}}
}

var testSite = Site{Root: "https://cat.example.org/api", DCAT: settings.DCAT{SiteName: "Meridian", BureauCodes: []string{"015:11"},
	ProgramCodes: []string{"015:001"}}}

func mapEntry(p *Profile, e Entry) *graph {
	blanks := 0
	g := newGraph(&blanks)
	mapper{p: p, site: testSite}.Dataset(g, e)
	return g
}

// A record with every field conforms to every profile's shapes.
func TestFullRecordConforms(t *testing.T) {
	// The same record as a raster too: its COG distribution and its spatial resolution.
	raster := fullEntry()
	raster.Record.RecordType, raster.Record.RasterResX, raster.Record.RasterGeographic = "raster_dataset", ptr(0.00025), ptr(true)
	for _, e := range []Entry{fullEntry(), raster} {
		for _, p := range Profiles {
			shapes, err := p.Shapes()
			if err != nil {
				t.Fatal(err)
			}
			doc := mapEntry(p, e).Graph
			if e.Record.RecordType == "raster_dataset" {
				found := ""
				for _, tr := range doc.Triples() {
					if tr.P.Value == dcatNS+"spatialResolutionInMeters" {
						found = tr.O.Value
					}
				}
				if !strings.HasPrefix(found, "17.1") { // 0.00025 degree at 52 degrees north
					t.Errorf("%s: spatial resolution %q, want about 17.1 m", p.Name, found)
				}
			}
			for _, r := range shapes.Validate(doc) {
				if r.Severity == rdf.Violation {
					t.Errorf("%s %s: %v %s %s %v (%s)", e.Record.RecordType, p.Name, r.Focus, r.Path, r.Component, r.Value, r.Detail)
				}
			}
		}
	}
}

// A bare record fails where each profile asks for more than a title, and the report says what
// to fix.
func TestMinimalRecordReport(t *testing.T) {
	want := map[string][]string{
		"dcat-ap-3":    {"dct:description"},
		"geodcat-ap-3": {"dct:description"},
		"dcat-us-3":    {"dcat:contactPoint", "dct:description", "dct:publisher"},
	}
	for _, p := range Profiles {
		f := &Feed{profile: p, site: testSite, single: true, limit: 1, first: []Entry{minimalEntry()}}
		rep, err := f.validate()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range rep.Errors {
			got = append(got, e.Path)
			if !strings.HasPrefix(e.Message, "add ") {
				t.Errorf("%s: message %q says no fix", p.Name, e.Message)
			}
		}
		if strings.Join(got, ",") != strings.Join(want[p.Name], ",") || rep.Valid || rep.ErrorCount != len(got) {
			t.Errorf("%s: errors %v, want %v", p.Name, got, want[p.Name])
		}
	}
}

// Documents for the SHACL engine, written when DCAT_DUMP names a folder (a tool for looking).
func TestDumpDocuments(t *testing.T) {
	dir := os.Getenv("DCAT_DUMP")
	if dir == "" {
		t.Skip("DCAT_DUMP not set")
	}
	for _, p := range Profiles {
		for name, e := range map[string]Entry{"full": fullEntry(), "minimal": minimalEntry()} {
			for _, f := range []rdf.Format{rdf.JSONLD, rdf.Turtle, rdf.RDFXML} {
				var b bytes.Buffer
				w := rdf.NewWriter(&b, f, Prefixes)
				_ = w.Begin()
				_ = w.Write(mapEntry(p, e).Graph)
				_ = w.End()
				ext := map[rdf.Format]string{rdf.JSONLD: "jsonld", rdf.Turtle: "ttl", rdf.RDFXML: "rdf"}[f]
				if err := os.WriteFile(filepath.Join(dir, p.Name+"-"+name+"."+ext), b.Bytes(), 0o600); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

func BenchmarkMapAndWrite(b *testing.B) {
	e := fullEntry()
	for _, f := range []rdf.Format{rdf.JSONLD, rdf.Turtle} {
		b.Run(f.MediaType(), func(b *testing.B) {
			w := rdf.NewWriter(io.Discard, f, Prefixes)
			_ = w.Begin()
			for i := 0; i < b.N; i++ {
				_ = w.Write(mapEntry(DCATAP, e).Graph)
			}
			_ = w.End()
		})
	}
}

// fakeRecords answers n copies of a record, in chunks, as the records query would.
type fakeRecords struct {
	n    int
	base Entry
}

func (f fakeRecords) Records(_ context.Context, _ auth.Principal, q catalog.RecordQuery) ([]catalog.Record, int, error) {
	start := q.Offset
	if q.After != nil {
		start = int(q.After.Values[0].(float64)) + 1
	}
	var out []catalog.Record
	for i := start; i < min(f.n, start+q.Limit); i++ {
		r := f.base.Record
		r.DatasetID = uuid.New()
		r.SortValues = []any{float64(i)}
		out = append(out, r)
	}
	return out, f.n, nil
}

func (f fakeRecords) RecordParts(context.Context, []uuid.UUID) (map[uuid.UUID][]catalog.Keyword, map[uuid.UUID][]catalog.Translation, error) {
	return nil, nil, nil
}

type fakeSettings struct{}

func (fakeSettings) DCAT(context.Context) (settings.DCAT, error) { return testSite.DCAT, nil }

// BenchmarkCatalogFeed writes a 10,000-record catalog (the mapping and the writer, no database).
func BenchmarkCatalogFeed(b *testing.B) {
	s := &Service{Records: fakeRecords{n: 10000, base: fullEntry()}, Settings: fakeSettings{}}
	for _, f := range []rdf.Format{rdf.JSONLD, rdf.Turtle} {
		b.Run(f.MediaType(), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				feed, err := s.Catalog(context.Background(), auth.Principal{}, DCATAP, testSite.Root, 10000, 0)
				if err != nil {
					b.Fatal(err)
				}
				var n countingWriter
				if err := feed.Write(&n, f); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(n)/(1<<20), "MB")
			}
		})
	}
}

type countingWriter int

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}
