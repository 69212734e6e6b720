package catalog

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"meridian/internal/auth"
	"meridian/internal/testdb"
	"meridian/store"
)

// The bbox of a records query is tested on the stored box by interval arithmetic; it must find
// exactly the records whose extent geometry (two boxes across the antimeridian) intersects the
// query's boxes, touching edges included. Random extents and queries, both kinds on both sides
// of the antimeridian, against PostGIS's ST_Intersects; with a text too, where the documents'
// copies of the extents narrow the search first (half of them set by a later update, as an edit
// of the record does).
func TestRecordsBBoxMatchesTheExtentGeometry(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	s := &Service{Pool: pool, Q: store.New(pool)}
	rnd := rand.New(rand.NewPCG(3, 5))
	// Whole degrees, so that edges touch often.
	lon := func() float64 { return float64(rnd.IntN(361) - 180) }
	lat := func() (float64, float64) {
		a, b := float64(rnd.IntN(181)-90), float64(rnd.IntN(181)-90)
		return min(a, b), max(a, b)
	}
	for i := 0; i < 300; i++ {
		s1, n1 := lat()
		extent := []float64{lon(), s1, lon(), n1} // west > east crosses the antimeridian
		if i%50 == 0 {
			extent = nil // no extent: in no bbox
		}
		var id uuid.UUID
		if err := pool.QueryRow(ctx, `INSERT INTO catalog.datasets (table_schema, table_name, title, visibility, record_status, record_type, extent_bbox)
			VALUES ('data', 'bbox_' || $1::int, 'bbox ' || $1::int, 'public', 'published', 'vector_dataset', CASE WHEN $1::int % 2 = 0 THEN $2::float8[] END)
			RETURNING id`, i, extent).Scan(&id); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `UPDATE catalog.datasets SET extent_bbox = $2 WHERE id = $1`, id, extent); err != nil {
			t.Fatal(err)
		}
	}
	admin := auth.Principal{UserID: uuid.New(), Role: auth.RoleAdmin, Via: auth.ViaBearer}
	for i := 0; i < 60; i++ {
		south, north := lat()
		bbox := []float64{lon(), south, lon(), north}
		var want []uuid.UUID
		err := pool.QueryRow(ctx, `SELECT coalesce(array_agg(d.id ORDER BY d.id), '{}') FROM catalog.datasets d
			WHERE ST_Intersects(`+recordExtent+`, CASE WHEN $1::float8 <= $3::float8 THEN ST_MakeEnvelope($1, $2, $3, $4, 4326)
				ELSE ST_Collect(ST_MakeEnvelope($1, $2, 180, $4, 4326), ST_MakeEnvelope(-180, $2, $3, $4, 4326)) END)`,
			bbox[0], bbox[1], bbox[2], bbox[3]).Scan(&want)
		if err != nil {
			t.Fatal(err)
		}
		for _, text := range []string{"", "bbox"} {
			recs, total, err := s.Records(ctx, admin, RecordQuery{BBox: bbox, Text: text, Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			got := make([]uuid.UUID, len(recs))
			for j, r := range recs {
				got[j] = r.DatasetID
			}
			slices.SortFunc(got, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
			if !slices.Equal(got, want) || total != len(want) {
				t.Fatalf("bbox %v, text %q: %d records (total %d), ST_Intersects finds %d", bbox, text, len(got), total, len(want))
			}
		}
	}
}

// A datetime with a bbox narrows the documents by their copy of the record's time (migration 135)
// before the record's own vintage decides: the copy must never drop a record the datetime
// matches. Records with a vintage, an open-ended one, one given in the wrong order, none (the
// creation date, for STAC), and a vintage set by a later edit; every interval with and without a
// bbox, both kinds of datetime match: the bbox (the whole world) must change nothing.
func TestRecordsDatetimeWithABBoxMatchesWithout(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	s := &Service{Pool: pool, Q: store.New(pool)}
	day := func(v string) *time.Time {
		if v == "" {
			return nil
		}
		d, err := time.Parse(time.DateOnly, v)
		if err != nil {
			t.Fatal(err)
		}
		return &d
	}
	vintages := [][2]string{{"2010-01-01", "2012-12-31"}, {"2015-06-01", ""}, {"", "2003-03-03"},
		{"2020-01-01", "2018-01-01"}, {"", ""}, {"2001-01-01", "2001-01-01"}}
	for i, v := range vintages {
		var id uuid.UUID
		if err := pool.QueryRow(ctx, `INSERT INTO catalog.datasets (table_schema, table_name, title, visibility, record_status,
				record_type, extent_bbox, data_vintage_start, data_vintage_end, created_at)
			VALUES ('data', 'time_' || $1::int, 'time ' || $1::int, 'public', 'published', 'vector_dataset', '{-10,-10,10,10}', $2, $3, '2016-07-01T23:30:00Z')
			RETURNING id`, i, day(v[0]), day(v[1])).Scan(&id); err != nil {
			t.Fatal(err)
		}
		if i == 0 { // moved by an edit after the insert
			if _, err := pool.Exec(ctx, `UPDATE catalog.datasets SET data_vintage_start = '2005-01-01', data_vintage_end = '2006-01-01' WHERE id = $1`, id); err != nil {
				t.Fatal(err)
			}
		}
	}
	admin := auth.Principal{UserID: uuid.New(), Role: auth.RoleAdmin, Via: auth.ViaBearer}
	intervals := [][2]string{{"2005-06-01", "2005-06-01"}, {"2011-01-01", "2011-12-31"}, {"2016-07-01", "2016-07-02"},
		{"2019-01-01", "2019-12-31"}, {"", "2002-01-01"}, {"2017-01-01", ""}, {"2000-01-01", "2030-01-01"}, {"2003-03-03", ""}}
	ids := func(q RecordQuery) []uuid.UUID {
		recs, _, err := s.Records(ctx, admin, q)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]uuid.UUID, len(recs))
		for j, r := range recs {
			out[j] = r.DatasetID
		}
		slices.SortFunc(out, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
		return out
	}
	matched := 0
	for _, stac := range []bool{false, true} {
		for _, iv := range intervals {
			q := RecordQuery{Start: day(iv[0]), End: day(iv[1]), TimeOrCreated: stac, Limit: 100}
			want := ids(q)
			q.BBox = []float64{-180, -90, 180, 90}
			if got := ids(q); !slices.Equal(got, want) {
				t.Errorf("datetime %v (stac %v): %d records with a bbox, %d without", iv, stac, len(got), len(want))
			}
			matched += len(want)
		}
	}
	if matched == 0 {
		t.Fatal("no interval matched any record: the comparison proves nothing")
	}
}

// keywordList skips catalog.record_keyword_list for a record without keywords of its own; it must
// answer what the function answers for every record: without themes, with themes only, with own
// keywords (one repeating a theme in another case, one from a vocabulary) and with both.
func TestKeywordListAgreesWithTheFunction(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	for i, c := range []struct {
		themes []string
		own    []string
	}{{nil, nil}, {[]string{"Water"}, nil}, {nil, []string{"rivers"}}, {[]string{"Water", "Transport"}, []string{"water", "canals", "Locks"}}} {
		var id uuid.UUID
		if err := pool.QueryRow(ctx, `INSERT INTO catalog.datasets (table_schema, table_name, title, record_type, theme_category)
			VALUES ('data', 'kw_' || $1::int, 'kw', 'vector_dataset', $2) RETURNING id`, i, c.themes).Scan(&id); err != nil {
			t.Fatal(err)
		}
		for j, k := range c.own {
			if _, err := pool.Exec(ctx, `INSERT INTO catalog.record_keywords (dataset_id, keyword, vocabulary_uri)
				VALUES ($1, $2, CASE WHEN $3::int = 1 THEN 'https://example.org/vocab' END)`, id, k, j); err != nil {
				t.Fatal(err)
			}
		}
	}
	var differ []string
	if err := pool.QueryRow(ctx, `SELECT coalesce(array_agg(d.table_name), '{}') FROM catalog.datasets d
		WHERE `+keywordList("d")+` IS DISTINCT FROM catalog.record_keyword_list(d.id, d.theme_category)`).Scan(&differ); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM catalog.datasets d WHERE cardinality(`+keywordList("d")+`) > 0`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if len(differ) > 0 || n != 3 {
		t.Fatalf("lists differ for %v; %d of 4 records with keywords, want 3", differ, n)
	}
}

// A search reads its documents' copies of their records' fields (migrations 34 and 35): an update
// of any one of them alone, as narrow as an UPDATE can be, must reach the copy in the same
// statement.
func TestSearchCopiesFollowEveryField(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	var user, id uuid.UUID
	if err := pool.QueryRow(ctx, `INSERT INTO catalog.users (username, email) VALUES ('copier', 'copier@example.org') RETURNING id`).Scan(&user); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `INSERT INTO catalog.datasets (table_schema, table_name, title, record_type)
		VALUES ('data', 'copied', 'copied', 'vector_dataset') RETURNING id`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ column, value string }{
		{"visibility", "'public'"}, {"record_status", "'published'"}, {"created_by", "'" + user.String() + "'::uuid"},
		{"extent_bbox", "'{170,-10,-170,10}'::float8[]"}, {"record_type", "'table'"}, {"theme_category", "'{Water}'::text[]"},
		{"source_organization", "'Agency'"}, {"srid", "3857"}, {"geometry_type", "'Polygon'"},
	} {
		if _, err := pool.Exec(ctx, "UPDATE catalog.datasets SET "+c.column+" = "+c.value+" WHERE id = $1", id); err != nil {
			t.Fatal(err)
		}
		var same bool
		if err := pool.QueryRow(ctx, `SELECT (s.visibility, s.record_status, s.created_by, s.extent_bbox, s.record_type, s.theme_category,
				s.source_organization, s.srid, s.geometry_type, s.extent)
			IS NOT DISTINCT FROM (d.visibility, d.record_status, d.created_by, d.extent_bbox, d.record_type, d.theme_category,
				d.source_organization, d.srid, d.geometry_type, catalog.search_extent(d.extent_bbox))
			FROM catalog.datasets d JOIN catalog.dataset_search s ON s.dataset_id = d.id WHERE d.id = $1`, id).Scan(&same); err != nil {
			t.Fatal(err)
		}
		if !same {
			t.Errorf("after an update of %s alone, the document's copy differs from the record", c.column)
		}
	}
	// An update that names the copied columns without changing them leaves the document alone.
	version := func() (v string) {
		if err := pool.QueryRow(ctx, `SELECT xmin::text FROM catalog.dataset_search WHERE dataset_id = $1`, id).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := version()
	if _, err := pool.Exec(ctx, `UPDATE catalog.datasets SET extent_bbox = extent_bbox, visibility = visibility WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	if after := version(); after != before {
		t.Errorf("an update changing no copied field rewrote the document (row version %s, then %s)", before, after)
	}
}

// A hybrid search orders by reciprocal rank fusion of two rankings taken among what the caller
// may see: the nearest records' order (Nearest, hidden ones dropped) and the text search's own
// order. Worked out here from the text search's answer and the visible nearest, it must be the
// hybrid search's page and count; a semantic search is the visible nearest in their order.
func TestHybridSearchFusesTheTwoRankings(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	s := &Service{Pool: pool, Q: store.New(pool)}
	owner, viewer := uuid.New(), auth.Principal{UserID: uuid.New(), Role: auth.RoleViewer, Via: auth.ViaBearer}
	if _, err := pool.Exec(ctx, `INSERT INTO catalog.users (id, username, email, password_hash, role)
		VALUES ($1, 'owner', 'owner@example.org', 'x', 'editor')`, owner); err != nil {
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(7, 9))
	titles := []string{"river survey", "river river survey", "lake survey", "river", "forest map", "river lake"}
	var all []uuid.UUID
	hidden := map[uuid.UUID]bool{}
	for i := range 40 {
		visibility := "public"
		if i%5 == 0 {
			visibility = "private"
		}
		var id uuid.UUID
		if err := pool.QueryRow(ctx, `INSERT INTO catalog.datasets (table_schema, table_name, title, visibility, record_status, record_type, created_by)
			VALUES ('data', 'fuse_' || $1::int, $2, $3, 'published', 'vector_dataset', $4) RETURNING id`,
			i, titles[rnd.IntN(len(titles))]+" "+string(rune('a'+i%26)), visibility, owner).Scan(&id); err != nil {
			t.Fatal(err)
		}
		all, hidden[id] = append(all, id), visibility == "private"
	}
	nearest := slices.Clone(all[:30])
	rnd.Shuffle(len(nearest), func(i, j int) { nearest[i], nearest[j] = nearest[j], nearest[i] })

	page := func(q RecordQuery) ([]uuid.UUID, int) {
		t.Helper()
		q.Limit = 100
		recs, total, err := s.Records(ctx, viewer, q)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]uuid.UUID, len(recs))
		for i, r := range recs {
			out[i] = r.DatasetID
		}
		return out, total
	}
	textOrder, _ := page(RecordQuery{Text: "river"})
	var nearOrder []uuid.UUID
	for _, id := range nearest {
		if !hidden[id] {
			nearOrder = append(nearOrder, id)
		}
	}
	if len(textOrder) < 5 || len(nearOrder) < 5 {
		t.Fatalf("%d text matches and %d visible nearest: too few to tell an order", len(textOrder), len(nearOrder))
	}
	score := map[uuid.UUID]float64{}
	for i, id := range nearOrder {
		score[id] += 1 / float64(60+i+1)
	}
	for i, id := range textOrder {
		if hidden[id] {
			t.Fatalf("the text search shows a private record %s", id)
		}
		score[id] += 1 / float64(60+i+1)
	}
	var want []uuid.UUID
	for id := range score {
		want = append(want, id)
	}
	slices.SortFunc(want, func(a, b uuid.UUID) int {
		if score[a] != score[b] {
			if score[a] > score[b] {
				return -1
			}
			return 1
		}
		return slices.Compare(a[:], b[:])
	})
	got, total := page(RecordQuery{Text: "river", Mode: SearchHybrid, Nearest: nearest})
	if !slices.Equal(got, want) || total != len(want) {
		t.Errorf("hybrid: %d records %v, want %d %v", total, got, len(want), want)
	}
	got, total = page(RecordQuery{Text: "river", Mode: SearchSemantic, Nearest: nearest})
	if !slices.Equal(got, nearOrder) || total != len(nearOrder) {
		t.Errorf("semantic: %d records %v, want %d %v", total, got, len(nearOrder), nearOrder)
	}
}
