package catalog

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"

	"meridian/internal/auth"
	"meridian/internal/db"
	"meridian/internal/sqlbuild"
)

// Search is the records query with a text: the record's full-text document (catalog.dataset_search,
// kept by a trigger on every change of the record, migration 16) matched with web-search syntax
// in the record's language and unstemmed, or, for typos, the title and keywords by trigram word
// similarity. A query with a text joins the documents as s.

// recordsFrom is the FROM of a records query: the records, and their documents for a text. A
// document carries copies of the fields that say who may see its record and of its stored box
// (migration 34), which a search reads there (see matchedRecord): when nothing else of the record
// is read before the page is chosen, PostgreSQL drops the join and reads only the page's records.
func recordsFrom(q RecordQuery) string {
	if !q.onDocuments() {
		return "catalog.datasets d"
	}
	return "catalog.dataset_search s LEFT JOIN catalog.datasets d ON d.id = s.dataset_id"
}

// onDocuments reports whether a records query reads its matches on the documents: for a text,
// and for a box, which the documents' extent index narrows (migration 32) before any record is
// read; the records themselves have no index on their box.
func (q RecordQuery) onDocuments() bool { return q.Text != "" || q.BBox != nil }

// matchedRecord is where a records query reads a record's id, visibility and stored box, and the
// facets' fields: the record (d), or in a search its document's copies (s; migrations 34 and 35).
func matchedRecord(q RecordQuery) (alias, id string) {
	if !q.onDocuments() {
		return "d", "d.id"
	}
	return "s", "s.dataset_id"
}

// searchQuery is the text as a tsquery: stemmed as english and as typed, either matching.
func searchQuery(b *sqlbuild.Builder, text string) string {
	arg := b.Cast(text, "text")
	// A scalar subquery: parsed once per statement, not once per row a generic plan filters.
	return "(SELECT websearch_to_tsquery('english', " + arg + ") || websearch_to_tsquery('simple', " + arg + "))"
}

// searchMatch is the condition of a text: the document matches; or, in the statement with the
// typo branch, which runs only when the first found nothing and the text is plain words (a
// second round trip for a search that found nothing, instead of planning and gating the branch
// in every search), and only when no document the caller may see matches: a word of the title or
// the keywords is like the text (strict word similarity >= 0.5), which finds "hydrography" for
// "hydrografy". A trigram test of every record is slow, and so is a trigram index for common
// words, hence the gate. It looks only at records the caller may see (visible): what a hidden
// record holds must not change what the caller finds.
func searchMatch(b *sqlbuild.Builder, q RecordQuery, visible func(alias string) string) string {
	tsq := searchQuery(b, q.Text)
	if !q.typos {
		return "s.doc @@ " + tsq
	}
	return "s.dataset_id IN (SELECT x.dataset_id FROM catalog.dataset_search x WHERE x.doc @@ " + tsq +
		" UNION ALL SELECT x.dataset_id FROM catalog.dataset_search x WHERE NOT EXISTS (SELECT FROM catalog.dataset_search y" +
		" JOIN catalog.datasets dy ON dy.id = y.dataset_id WHERE y.doc @@ " + tsq + " AND " + visible("dy") +
		") AND " + b.Cast(strings.ToLower(q.Text), "text") + " <<% x.words)"
}

// Search modes beside the text's own ranking (RecordQuery.Mode).
const (
	SearchSemantic = "semantic"
	SearchHybrid   = "hybrid"
)

// rankFusion is the k of reciprocal rank fusion: a record's score is the sum of 1/(k + rank)
// over the rankings it is in (k = 60, as in Cormack, Clarke and Buettcher 2009), so a record
// near the top of both beats one at the top of only one.
const rankFusion = "60"

// rankedFrom is the FROM of a semantic or hybrid search: the records the caller may see and
// that match where, each with its score (s.score). The candidates are the nearest records, in a
// hybrid search also the text's matches (found by the documents' index, as a text search finds
// them); both rankings are taken among the visible matches only, so what a hidden record holds
// never moves what the caller sees. The two rankings are made apart and joined on the record (a
// hash join of the few hundred nearest with the matches): the nearest are read by their ids
// without their documents, and each match once, by the index. Excluding the nearest from the
// matches instead (<> ALL of the ids) compared every match with every id, since a prepared
// statement's array is a parameter, not a constant PostgreSQL hashes: a third of the statement.
func rankedFrom(b *sqlbuild.Builder, q RecordQuery, where []string) string {
	ids, cond := b.Cast(uuidArray(q.Nearest), "uuid[]"), strings.Join(where, " AND ")
	docs := " catalog.dataset_search s LEFT JOIN catalog.datasets d ON d.id = s.dataset_id"
	near := "SELECT s.dataset_id, row_number() OVER (ORDER BY u.pos) AS near_rank FROM unnest(" + ids +
		") WITH ORDINALITY u(id, pos) JOIN" + docs + " ON s.dataset_id = u.id WHERE " + cond
	fused := "SELECT n.dataset_id, 1.0 / (" + rankFusion + " + n.near_rank) AS score FROM (" + near + ") n"
	if q.Mode == SearchHybrid {
		tsq := searchQuery(b, q.Text)
		text := "SELECT s.dataset_id, row_number() OVER (ORDER BY ts_rank_cd(s.doc, " + tsq + ", 1) DESC, s.dataset_id) AS text_rank FROM" +
			docs + " WHERE s.doc @@ " + tsq + " AND " + cond
		fused = "SELECT coalesce(n.dataset_id, t.dataset_id) AS dataset_id, coalesce(1.0 / (" + rankFusion + " + n.near_rank), 0) + coalesce(1.0 / (" +
			rankFusion + " + t.text_rank), 0) AS score FROM (" + near + ") n FULL JOIN (" + text + ") t ON t.dataset_id = n.dataset_id"
	}
	return "(" + fused + ") s LEFT JOIN catalog.datasets d ON d.id = s.dataset_id"
}

// uuidArray is ids as pgx writes them in binary: a []uuid.UUID goes through each id's
// driver.Valuer, as text parsed again (7% of a hybrid search's server CPU for its 200 ids).
func uuidArray(ids []uuid.UUID) []pgtype.UUID {
	out := make([]pgtype.UUID, len(ids))
	for i, id := range ids {
		out[i] = pgtype.UUID{Bytes: id, Valid: true}
	}
	return out
}

// retryForTypos turns on the typo branch of a query whose statement found nothing, when its text
// may be a misspelling; false when there is nothing to retry.
func retryForTypos(q *RecordQuery) bool {
	if q.Text == "" || q.typos || q.Mode != "" || !plainWords(q.Text) {
		return false
	}
	q.typos = true
	return true
}

// plainWords reports whether a web-search text is words only, without operators, and long
// enough for trigrams to say something: a word of at least 5 letters (shorter words have too few
// trigrams to tell a typo from another word, and would make the index useless).
func plainWords(text string) bool {
	long := false
	for _, w := range strings.Fields(text) {
		if strings.HasPrefix(w, "-") || strings.ContainsRune(w, '"') || strings.EqualFold(w, "or") {
			return false
		}
		long = long || utf8.RuneCountInString(w) >= 5
	}
	return long
}

// searchRank orders by relevance: cover density of the document (title and keywords weigh
// most); in the statement with the typo branch, a record found by it only (its document does not
// match) ranks by its trigram likeness instead, which is then the only trigram work a search
// does per record.
func searchRank(b *sqlbuild.Builder, q RecordQuery) string {
	tsq := searchQuery(b, q.Text)
	if !q.typos {
		return "ts_rank_cd(s.doc, " + tsq + ", 1)"
	}
	return "(CASE WHEN s.doc @@ " + tsq + " THEN ts_rank_cd(s.doc, " + tsq + ", 1) ELSE strict_word_similarity(" +
		b.Cast(strings.ToLower(q.Text), "text") + ", s.words) END)"
}

// Facets are the counts of the records matching a query, per value of each facet field.
type Facets struct {
	RecordType         map[string]int
	Keywords           []Bucket
	SourceOrganization []Bucket
	SRID               []Bucket
	GeometryType       []Bucket
	Collections        []CollectionBucket
}

// Bucket is one value of a facet and how many matching records have it.
type Bucket struct {
	Value string `json:"value"`
	Count int    `json:"count"`
}

// CollectionBucket is a catalog collection and how many matching records it holds.
type CollectionBucket struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Count int    `json:"count"`
}

// Facets counts the records the caller may see that match q (its paging and order aside), at
// most size values per field, by count then value, in one statement. A record the caller may not
// read is in no count, and so is a collection the caller may not see.
func (s *Service) Facets(ctx context.Context, p auth.Principal, q RecordQuery, size int) (Facets, error) {
	f, err := s.facets(ctx, p, q, size)
	if err == nil && len(f.RecordType) == 0 && retryForTypos(&q) {
		return s.facets(ctx, p, q, size)
	}
	return f, err
}

func (s *Service) facets(ctx context.Context, p auth.Principal, q RecordQuery, size int) (Facets, error) {
	var b sqlbuild.Builder
	where, err := visibleRecords(&b, p, q)
	if err != nil {
		return Facets{}, err
	}
	caller, _ := who(p)
	n := b.Cast(size, "int")
	bucket := func(expr string) string {
		return `(SELECT coalesce(jsonb_agg(jsonb_build_object('value', v, 'count', c) ORDER BY c DESC, v), '[]')
			FROM (SELECT ` + expr + ` AS v, count(*) AS c FROM m WHERE ` + expr + ` IS NOT NULL GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT ` + n + `) x)`
	}
	alias, id := matchedRecord(q)
	fields := id + " AS id"
	for _, f := range []string{"record_type", "theme_category", "source_organization", "srid", "geometry_type"} {
		fields += ", " + alias + "." + f
	}
	sql := `WITH m AS MATERIALIZED (SELECT ` + fields + `
			FROM ` + recordsFrom(q) + ` WHERE ` + strings.Join(where, " AND ") + `)
		SELECT (SELECT coalesce(jsonb_object_agg(record_type, c), '{}') FROM (SELECT record_type, count(*) AS c FROM m GROUP BY 1) x),
			(SELECT coalesce(jsonb_agg(jsonb_build_object('value', v, 'count', c) ORDER BY c DESC, v), '[]')
				FROM (SELECT k AS v, count(DISTINCT m.id) AS c FROM m, unnest(` + keywordList("m") + `) k
					GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT ` + n + `) x),
			` + bucket("m.source_organization") + `, ` + bucket("m.srid::text") + `, ` + bucket("m.geometry_type") + `,
			(SELECT coalesce(jsonb_agg(jsonb_build_object('id', id, 'name', name, 'count', c) ORDER BY c DESC, name), '[]')
				FROM (SELECT c.id, c.name, count(*) AS c FROM m JOIN catalog.collection_datasets cd ON cd.dataset_id = m.id
					JOIN catalog.collections c ON c.id = cd.collection_id
					WHERE catalog.collection_visible(c.visibility, c.created_by, ` + b.Arg(caller) + `, ` + b.Arg(p.IsAdmin()) + `)
					GROUP BY c.id, c.name ORDER BY 3 DESC, 2 LIMIT ` + n + `) x)`
	var types, keywords, orgs, srids, gtypes, cols []byte
	err = s.Pool.QueryRow(ctx, sql, b.Args()...).Scan(&types, &keywords, &orgs, &srids, &gtypes, &cols)
	if err != nil {
		return Facets{}, db.QueryValueError(err)
	}
	var f Facets
	for _, part := range []struct {
		raw  []byte
		into any
	}{{types, &f.RecordType}, {keywords, &f.Keywords}, {orgs, &f.SourceOrganization}, {srids, &f.SRID},
		{gtypes, &f.GeometryType}, {cols, &f.Collections}} {
		if err := json.Unmarshal(part.raw, part.into); err != nil {
			return Facets{}, err
		}
	}
	return f, nil
}

// Summary describes what the caller may see of the catalog as a whole: the values present of the
// fields clients build their filter lists from, and the extent in space and time.
type Summary struct {
	GeometryTypes, RecordTypes, SourceOrganizations, Keywords []string
	SRIDs                                                     []int32
	BBox                                                      []float64  // WGS84; nil when no record has an extent
	Start, End                                                *time.Time // earliest vintage start, latest vintage end
	KeywordsCut                                               bool       // more keywords exist than summaryKeywords
}

// summaryKeywords bounds the keyword list of a summary: a catalog may hold thousands of them, and
// a filter list longer than this is not read by anybody.
const summaryKeywords = 500

// CatalogSummary summarises the records the caller may see, in one statement.
func (s *Service) CatalogSummary(ctx context.Context, p auth.Principal) (Summary, error) {
	var b sqlbuild.Builder
	where, err := visibleRecords(&b, p, RecordQuery{})
	if err != nil {
		return Summary{}, err
	}
	values := func(expr string) string {
		return "array(SELECT DISTINCT " + expr + " FROM m WHERE " + expr + " IS NOT NULL ORDER BY 1)"
	}
	sql := `WITH m AS MATERIALIZED (SELECT d.id, d.record_type, d.theme_category, d.source_organization, d.srid, d.geometry_type,
			d.extent_bbox, d.data_vintage_start, d.data_vintage_end FROM catalog.datasets d WHERE ` + strings.Join(where, " AND ") + `)
		SELECT ` + values("geometry_type") + `, ` + values("record_type") + `, ` + values("source_organization") + `,
			array(SELECT DISTINCT k FROM m, unnest(` + keywordList("m") + `) k ORDER BY 1 LIMIT ` + strconv.Itoa(summaryKeywords+1) + `),
			` + values("srid") + `,
			(SELECT CASE WHEN count(*) > 0 THEN ARRAY[
				CASE WHEN bool_or(extent_bbox[1] > extent_bbox[3]) THEN -180 ELSE min(extent_bbox[1]) END, min(extent_bbox[2]),
				CASE WHEN bool_or(extent_bbox[1] > extent_bbox[3]) THEN 180 ELSE max(extent_bbox[3]) END, max(extent_bbox[4])]::float8[] END
				FROM m WHERE cardinality(extent_bbox) = 4),
			(SELECT min(coalesce(data_vintage_start, data_vintage_end))::timestamptz FROM m),
			(SELECT max(coalesce(data_vintage_end, data_vintage_start))::timestamptz FROM m)`
	var out Summary
	err = s.Pool.QueryRow(ctx, sql, b.Args()...).Scan(&out.GeometryTypes, &out.RecordTypes, &out.SourceOrganizations, &out.Keywords,
		&out.SRIDs, &out.BBox, &out.Start, &out.End)
	if len(out.Keywords) > summaryKeywords {
		out.Keywords, out.KeywordsCut = out.Keywords[:summaryKeywords], true
	}
	return out, db.QueryValueError(err)
}
