package dcat

import (
	"context"
	"io"
	"net/url"
	"strconv"

	"github.com/google/uuid"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/catalog"
	"meridian/internal/rdf"
	"meridian/internal/settings"
)

// MaxLimit is the largest catalog page; a larger limit is clamped to it.
const MaxLimit = 10000

// chunk is how many records a catalog feed reads at a time: a 10,000-record page is read in
// keyset steps and written as it comes, never held whole (two chunks at most: the one being
// written and the next).
const chunk = 1000

// Records is what the feeds need of the catalog: the records query under the caller's
// visibility, and the keywords and translations of the records it answered.
type Records interface {
	Records(ctx context.Context, p auth.Principal, q catalog.RecordQuery) ([]catalog.Record, int, error)
	RecordParts(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID][]catalog.Keyword, map[uuid.UUID][]catalog.Translation, error)
}

// Settings reads the feed settings.
type Settings interface {
	DCAT(ctx context.Context) (settings.DCAT, error)
}

// Service builds the feeds and their validation reports.
type Service struct {
	Records  Records
	Settings Settings
}

// Feed is a feed ready to be written: its first records are read (so a failure is still an
// error response), the rest are read as it is written.
type Feed struct {
	svc     *Service
	ctx     context.Context
	caller  auth.Principal
	profile *Profile
	site    Site
	single  bool // one record's document, without the catalog
	limit   int
	offset  int
	Total   int // records of the whole catalog the caller may see
	first   []Entry
	more    bool
}

// Catalog prepares a catalog page: the records the caller may see in title order, limit (at most
// MaxLimit) from offset.
func (s *Service) Catalog(ctx context.Context, p auth.Principal, profile *Profile, root string, limit, offset int) (*Feed, error) {
	f, err := s.feed(ctx, p, profile, root)
	if err != nil {
		return nil, err
	}
	f.limit, f.offset = min(max(limit, 1), MaxLimit), max(offset, 0)
	q := catalog.RecordQuery{Limit: min(f.limit, chunk), Offset: f.offset, Sort: []catalog.SortKey{{Field: "title"}}, Keyed: true}
	f.first, f.Total, err = s.read(ctx, p, q)
	f.more = len(f.first) == q.Limit && f.limit > q.Limit
	return f, err
}

// Record prepares one dataset's document; 404 when the caller may not see it.
func (s *Service) Record(ctx context.Context, p auth.Principal, profile *Profile, root string, id uuid.UUID) (*Feed, error) {
	f, err := s.feed(ctx, p, profile, root)
	if err != nil {
		return nil, err
	}
	f.single, f.limit = true, 1
	f.first, f.Total, err = s.read(ctx, p, catalog.RecordQuery{RecordID: &id, Limit: 1})
	if err == nil && len(f.first) == 0 {
		return nil, apperr.NotFound("dataset %s not found", id)
	}
	return f, err
}

func (s *Service) feed(ctx context.Context, p auth.Principal, profile *Profile, root string) (*Feed, error) {
	if _, err := profile.Shapes(); err != nil {
		return nil, err
	}
	set, err := s.Settings.DCAT(ctx)
	if err != nil {
		return nil, err
	}
	return &Feed{svc: s, ctx: ctx, caller: p, profile: profile, site: Site{Root: root, DCAT: set}}, nil
}

// read runs a records query and reads the parts of the records it answered.
func (s *Service) read(ctx context.Context, p auth.Principal, q catalog.RecordQuery) ([]Entry, int, error) {
	records, total, err := s.Records.Records(ctx, p, q)
	if err != nil {
		return nil, 0, err
	}
	ids := make([]uuid.UUID, len(records))
	for i, r := range records {
		ids[i] = r.DatasetID
	}
	keywords, translations, err := s.Records.RecordParts(ctx, ids)
	if err != nil {
		return nil, 0, err
	}
	out := make([]Entry, len(records))
	for i, r := range records {
		out[i] = Entry{Record: r, Keywords: keywords[r.DatasetID], Translations: translations[r.DatasetID]}
	}
	return out, total, nil
}

// each calls fn with every record of the page, reading chunk after chunk by keyset (the title,
// then the id), so records added or changed meanwhile neither repeat nor shift the page. The
// next chunk is read while the current one is written: the database and the writer overlap.
func (f *Feed) each(fn func(Entry) error) error {
	type batch struct {
		entries []Entry
		err     error
	}
	entries, done, more := f.first, 0, f.more
	for {
		var next chan batch
		if more && done+len(entries) < f.limit && len(entries) > 0 {
			last := entries[len(entries)-1].Record
			q := catalog.RecordQuery{Limit: min(chunk, f.limit-done-len(entries)), Sort: []catalog.SortKey{{Field: "title"}}, Keyed: true,
				After: &catalog.RecordAfter{Values: last.SortValues, ID: last.DatasetID}}
			next = make(chan batch, 1) // buffered: an abandoned read ends without a reader
			go func() {
				e, _, err := f.svc.read(f.ctx, f.caller, q)
				next <- batch{e, err}
			}()
			more = true
		} else {
			more = false
		}
		for _, e := range entries {
			if err := fn(e); err != nil {
				return err
			}
		}
		done += len(entries)
		if next == nil {
			return nil
		}
		b := <-next
		if b.err != nil {
			return b.err
		}
		want := min(chunk, f.limit-done)
		entries, more = b.entries, len(b.entries) == want
	}
}

// Write writes the feed in format to w, record by record.
func (f *Feed) Write(w io.Writer, format rdf.Format) error {
	out := rdf.NewWriter(w, format, Prefixes)
	if err := out.Begin(); err != nil {
		return err
	}
	m, blanks := mapper{p: f.profile, site: f.site}, 0
	written := map[string]bool{} // shared nodes already described in this document
	doc := rdf.NewGraph()
	emit := func(g *graph) error {
		doc.Reset()
		for _, t := range g.Triples() {
			if !t.S.IsIRI() || !g.shared[t.S.Value] || !written[t.S.Value] {
				doc.Append(t.S, t.P, t.O)
			}
		}
		for s := range g.shared {
			written[s] = true
		}
		return out.Write(doc)
	}
	var cat rdf.Term
	if !f.single {
		g := newGraph(&blanks)
		cat = m.Catalog(g)
		f.paging(g, cat)
		if err := emit(g); err != nil {
			return err
		}
	}
	n, g := 0, newGraph(&blanks)
	err := f.each(func(e Entry) error {
		g.reset()
		ds := m.Dataset(g, e)
		if !f.single {
			g.add(cat, dcatNS+"dataset", ds)
		}
		if err := emit(g); err != nil {
			return err
		}
		if n++; n%100 == 0 {
			return out.Flush() // the client gets the document as it is made
		}
		return nil
	})
	if err != nil {
		return err
	}
	return out.End()
}

// paging links a page that is not the whole catalog to the others (Hydra's partial collection
// view), with the count of the whole.
func (f *Feed) paging(g *graph, cat rdf.Term) {
	if f.offset == 0 && f.Total <= f.limit {
		return
	}
	page := func(offset int) rdf.Term {
		q := url.Values{"limit": {strconv.Itoa(f.limit)}, "offset": {strconv.Itoa(max(offset, 0))}}
		return rdf.IRI(f.site.Root + f.profile.Path + "?" + q.Encode())
	}
	view := page(f.offset)
	g.typed(view, hydraNS+"PartialCollectionView")
	g.add(view, hydraNS+"first", page(0))
	g.add(view, hydraNS+"last", page((max(f.Total-1, 0)/f.limit)*f.limit))
	if f.offset > 0 {
		g.add(view, hydraNS+"previous", page(f.offset-f.limit))
	}
	if f.offset+f.limit < f.Total {
		g.add(view, hydraNS+"next", page(f.offset+f.limit))
	}
	g.add(view, hydraNS+"totalItems", rdf.Typed(strconv.Itoa(f.Total), rdf.XSDNS+"integer"))
	g.add(cat, hydraNS+"view", view)
}
