package handlers

// The open-data feeds of the Datasets - Export tag (internal/dcat builds and validates them; the
// records query decides who sees what, counts included): the operations' stubs in
// datasets_export.go call these.

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"meridian/gen"
	"meridian/internal/auth"
	"meridian/internal/dcat"
	"meridian/internal/rdf"
	"meridian/internal/web"
)

// dcatRoot is the API root at the request's public address, under which the feeds' IRIs are.
func (s *Server) dcatRoot(ctx context.Context) string { return s.base(ctx) + "/api" }

// dcatCatalog answers a catalog page of profile in the negotiated serialization.
func (s *Server) dcatCatalog(ctx context.Context, profile *dcat.Profile, format string, limit, offset *int) (dcatFeed, error) {
	f, err := s.dcat.Catalog(ctx, auth.From(ctx), profile, s.dcatRoot(ctx), valOr(limit, dcat.MaxLimit), val(offset))
	return s.dcatAnswer(ctx, f, format), err
}

// dcatRecord answers one dataset's document of profile.
func (s *Server) dcatRecord(ctx context.Context, profile *dcat.Profile, format string, id uuid.UUID) (dcatFeed, error) {
	f, err := s.dcat.Record(ctx, auth.From(ctx), profile, s.dcatRoot(ctx), id)
	return s.dcatAnswer(ctx, f, format), err
}

func (s *Server) dcatAnswer(ctx context.Context, f *dcat.Feed, format string) dcatFeed {
	out := dcatFeed{feed: f, log: s.log}
	out.format, out.mediaType = negotiateRDF(format, web.MetaFrom(ctx).Accept)
	return out
}

// dcatValidation answers a validation report.
func dcatValidation(r dcat.Report, err error) (gen.DcatValidationReport, error) {
	out := gen.DcatValidationReport{Schema: gen.DcatValidationReportSchema(r.Schema), Valid: r.Valid, ErrorCount: r.ErrorCount,
		Errors: make([]gen.DcatValidationError, len(r.Errors))}
	for i, e := range r.Errors {
		out.Errors[i] = gen.DcatValidationError{Path: e.Path, SchemaPath: e.SchemaPath, Validator: e.Validator, Message: e.Message,
			FocusNode: e.FocusNode, Value: e.Value, DatasetId: e.DatasetID}
	}
	return out, err
}

func valOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// formatOf is the format parameter of any feed operation, "" when absent.
func formatOf[T ~string](f *T) string {
	if f == nil {
		return ""
	}
	return string(*f)
}

// rdfMediaTypes are the media types the feeds answer, by what clients ask.
var rdfMediaTypes = map[string]rdf.Format{"application/ld+json": rdf.JSONLD, "application/json": rdf.JSONLD,
	"text/turtle": rdf.Turtle, "application/rdf+xml": rdf.RDFXML, "*/*": rdf.JSONLD, "application/*": rdf.JSONLD, "text/*": rdf.Turtle}

// negotiateRDF chooses the serialization: the format parameter, else the Accept media range of
// the highest quality the feeds answer (the first of equals), else JSON-LD.
func negotiateRDF(format, accept string) (rdf.Format, string) {
	switch format {
	case "turtle":
		return rdf.Turtle, rdf.Turtle.MediaType()
	case "rdfxml":
		return rdf.RDFXML, rdf.RDFXML.MediaType()
	case "jsonld":
		return rdf.JSONLD, rdf.JSONLD.MediaType()
	}
	best, bestQ, mediaType := rdf.JSONLD, 0.0, rdf.JSONLD.MediaType()
	for _, part := range strings.Split(accept, ",") {
		fields := strings.Split(part, ";")
		mt, q := strings.ToLower(strings.TrimSpace(fields[0])), 1.0
		for _, p := range fields[1:] {
			if v, ok := strings.CutPrefix(strings.TrimSpace(p), "q="); ok {
				if f, err := strconv.ParseFloat(v, 64); err == nil {
					q = f
				}
			}
		}
		if f, ok := rdfMediaTypes[mt]; ok && q > bestQ {
			best, bestQ, mediaType = f, q, f.MediaType()
			if mt == "application/json" {
				mediaType = mt
			}
		}
	}
	return best, mediaType
}

// dcatFeed streams a feed. Its first records are read when the handler returns (a failure
// there is a problem response); the rest are read as the document is written, so a failure
// then can only cut the response, which the client sees as a broken document.
type dcatFeed struct {
	feed      *dcat.Feed
	format    rdf.Format
	mediaType string
	log       interface {
		Error(msg string, args ...any)
	}
}

func (r dcatFeed) visit(w http.ResponseWriter) error {
	w.Header().Set("Content-Type", r.mediaType)
	w.WriteHeader(http.StatusOK)
	if err := r.feed.Write(w, r.format); err != nil {
		r.log.Error("dcat feed cut", "err", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}

func (r dcatFeed) VisitDcatCatalogResponse(w http.ResponseWriter) error      { return r.visit(w) }
func (r dcatFeed) VisitDcatRecordResponse(w http.ResponseWriter) error       { return r.visit(w) }
func (r dcatFeed) VisitDcatUS3CatalogResponse(w http.ResponseWriter) error   { return r.visit(w) }
func (r dcatFeed) VisitDcatUS3RecordResponse(w http.ResponseWriter) error    { return r.visit(w) }
func (r dcatFeed) VisitGeodcatAPCatalogResponse(w http.ResponseWriter) error { return r.visit(w) }
func (r dcatFeed) VisitGeodcatAPRecordResponse(w http.ResponseWriter) error  { return r.visit(w) }

// feedAnswer is a feed as the response object of its operation, or the error.
func feedAnswer[T any](f dcatFeed, err error) (T, error) {
	var none T
	if err != nil {
		return none, err
	}
	return any(f).(T), nil
}
