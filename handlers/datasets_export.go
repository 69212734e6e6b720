package handlers

// Operations of the Datasets - Export tag.

import (
	"context"
	"io"
	"mime"
	"net/http"
	"strconv"

	"meridian/gen"
	"meridian/internal/auth"
	"meridian/internal/dcat"
)

// DcatUS3Catalog: DCAT-US 3 catalog (GET /datasets/dcat-us/3.0/).
func (s *Server) DcatUS3Catalog(ctx context.Context, request gen.DcatUS3CatalogRequestObject) (gen.DcatUS3CatalogResponseObject, error) {
	return feedAnswer[gen.DcatUS3CatalogResponseObject](s.dcatCatalog(ctx, dcat.DCATUS, formatOf(request.Params.Format), request.Params.Limit,
		request.Params.Offset))
}

// ValidateDCATUS3Catalog: Validate DCAT-US 3 catalog (GET /datasets/dcat-us/3.0/validation/).
func (s *Server) ValidateDCATUS3Catalog(ctx context.Context, request gen.ValidateDCATUS3CatalogRequestObject) (gen.ValidateDCATUS3CatalogResponseObject, error) {
	r, err := dcatValidation(s.dcat.ValidateCatalog(ctx, auth.From(ctx), dcat.DCATUS, s.dcatRoot(ctx),
		valOr(request.Params.Limit, dcat.MaxLimit), val(request.Params.Offset)))
	return gen.ValidateDCATUS3Catalog200JSONResponse(r), err
}

// DcatCatalog: DCAT catalog (GET /datasets/dcat/).
func (s *Server) DcatCatalog(ctx context.Context, request gen.DcatCatalogRequestObject) (gen.DcatCatalogResponseObject, error) {
	return feedAnswer[gen.DcatCatalogResponseObject](s.dcatCatalog(ctx, dcat.DCATAP, formatOf(request.Params.Format), request.Params.Limit,
		request.Params.Offset))
}

// ValidateDCATCatalog: Validate DCAT catalog (GET /datasets/dcat/validation/).
func (s *Server) ValidateDCATCatalog(ctx context.Context, request gen.ValidateDCATCatalogRequestObject) (gen.ValidateDCATCatalogResponseObject, error) {
	r, err := dcatValidation(s.dcat.ValidateCatalog(ctx, auth.From(ctx), dcat.DCATAP, s.dcatRoot(ctx),
		valOr(request.Params.Limit, dcat.MaxLimit), val(request.Params.Offset)))
	return gen.ValidateDCATCatalog200JSONResponse(r), err
}

// GeodcatAPCatalog: GeoDCAT-AP catalog (GET /datasets/geodcat-ap/).
func (s *Server) GeodcatAPCatalog(ctx context.Context, request gen.GeodcatAPCatalogRequestObject) (gen.GeodcatAPCatalogResponseObject, error) {
	return feedAnswer[gen.GeodcatAPCatalogResponseObject](s.dcatCatalog(ctx, dcat.GeoDCATAP, formatOf(request.Params.Format), request.Params.Limit,
		request.Params.Offset))
}

// ValidateGeoDCATAPCatalog: Validate GeoDCAT-AP catalog (GET /datasets/geodcat-ap/validation/).
func (s *Server) ValidateGeoDCATAPCatalog(ctx context.Context, request gen.ValidateGeoDCATAPCatalogRequestObject) (gen.ValidateGeoDCATAPCatalogResponseObject, error) {
	r, err := dcatValidation(s.dcat.ValidateCatalog(ctx, auth.From(ctx), dcat.GeoDCATAP, s.dcatRoot(ctx),
		valOr(request.Params.Limit, dcat.MaxLimit), val(request.Params.Offset)))
	return gen.ValidateGeoDCATAPCatalog200JSONResponse(r), err
}

// DcatUS3Record: DCAT-US 3 record (GET /datasets/{dataset_id}/dcat-us/3.0/).
func (s *Server) DcatUS3Record(ctx context.Context, request gen.DcatUS3RecordRequestObject) (gen.DcatUS3RecordResponseObject, error) {
	return feedAnswer[gen.DcatUS3RecordResponseObject](s.dcatRecord(ctx, dcat.DCATUS, formatOf(request.Params.Format), request.DatasetId))
}

// ValidateDCATUS3Record: Validate DCAT-US 3 record (GET /datasets/{dataset_id}/dcat-us/3.0/validation/).
func (s *Server) ValidateDCATUS3Record(ctx context.Context, request gen.ValidateDCATUS3RecordRequestObject) (gen.ValidateDCATUS3RecordResponseObject, error) {
	r, err := dcatValidation(s.dcat.ValidateRecord(ctx, auth.From(ctx), dcat.DCATUS, s.dcatRoot(ctx), request.DatasetId))
	return gen.ValidateDCATUS3Record200JSONResponse(r), err
}

// DcatRecord: DCAT record (GET /datasets/{dataset_id}/dcat/).
func (s *Server) DcatRecord(ctx context.Context, request gen.DcatRecordRequestObject) (gen.DcatRecordResponseObject, error) {
	return feedAnswer[gen.DcatRecordResponseObject](s.dcatRecord(ctx, dcat.DCATAP, formatOf(request.Params.Format), request.DatasetId))
}

// ValidateDCATRecord: Validate DCAT record (GET /datasets/{dataset_id}/dcat/validation/).
func (s *Server) ValidateDCATRecord(ctx context.Context, request gen.ValidateDCATRecordRequestObject) (gen.ValidateDCATRecordResponseObject, error) {
	r, err := dcatValidation(s.dcat.ValidateRecord(ctx, auth.From(ctx), dcat.DCATAP, s.dcatRoot(ctx), request.DatasetId))
	return gen.ValidateDCATRecord200JSONResponse(r), err
}

// GeodcatAPRecord: GeoDCAT-AP record (GET /datasets/{dataset_id}/geodcat-ap/).
func (s *Server) GeodcatAPRecord(ctx context.Context, request gen.GeodcatAPRecordRequestObject) (gen.GeodcatAPRecordResponseObject, error) {
	return feedAnswer[gen.GeodcatAPRecordResponseObject](s.dcatRecord(ctx, dcat.GeoDCATAP, formatOf(request.Params.Format), request.DatasetId))
}

// ValidateGeoDCATAPRecord: Validate GeoDCAT-AP record (GET /datasets/{dataset_id}/geodcat-ap/validation/).
func (s *Server) ValidateGeoDCATAPRecord(ctx context.Context, request gen.ValidateGeoDCATAPRecordRequestObject) (gen.ValidateGeoDCATAPRecordResponseObject, error) {
	r, err := dcatValidation(s.dcat.ValidateRecord(ctx, auth.From(ctx), dcat.GeoDCATAP, s.dcatRoot(ctx), request.DatasetId))
	return gen.ValidateGeoDCATAPRecord200JSONResponse(r), err
}

// exportClient names the caller of an export for its per-client bound: the user, or the client
// address of an anonymous caller.
func exportClient(ctx context.Context, p auth.Principal) string {
	if p.Anonymous() {
		return "ip:" + client(ctx).IP
	}
	return "user:" + p.UserID.String()
}

// exportResponse streams an export; Close ends the process or removes the temporary file.
type exportResponse struct {
	mediaType, filename string
	body                io.ReadCloser
	size                int64
}

// VisitExportDatasetResponse sends the export. The export has produced its first bytes by now
// (export.Exporter.Open), so the 200 is honest when it goes out; if the export or the client fails
// later, the handler is aborted, which closes the connection without the response's proper end
// (no last chunk, or fewer bytes than Content-Length): the client sees a broken download rather
// than a complete-looking short file. The exporter has logged why.
func (r exportResponse) VisitExportDatasetResponse(w http.ResponseWriter) error {
	defer r.body.Close()
	w.Header().Set("Content-Type", r.mediaType)
	// FormatMediaType writes a non-ASCII name in RFC 2231's filename*=utf-8''... form.
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": r.filename}))
	if r.size > 0 {
		w.Header().Set("Content-Length", strconv.FormatInt(r.size, 10))
	}
	w.WriteHeader(http.StatusOK)
	if _, err := io.Copy(w, r.body); err != nil {
		panic(http.ErrAbortHandler)
	}
	return nil
}
