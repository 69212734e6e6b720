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
)

// DcatUS3Catalog: DCAT-US 3 catalog (GET /datasets/dcat-us/3.0/).
func (s *Server) DcatUS3Catalog(ctx context.Context, request gen.DcatUS3CatalogRequestObject) (gen.DcatUS3CatalogResponseObject, error) {
	return nil, notImplemented("dcatUS3Catalog")
}

// ValidateDCATUS3Catalog: Validate DCAT-US 3 catalog (GET /datasets/dcat-us/3.0/validation/).
func (s *Server) ValidateDCATUS3Catalog(ctx context.Context, request gen.ValidateDCATUS3CatalogRequestObject) (gen.ValidateDCATUS3CatalogResponseObject, error) {
	return nil, notImplemented("validateDCATUS3Catalog")
}

// DcatCatalog: DCAT catalog (GET /datasets/dcat/).
func (s *Server) DcatCatalog(ctx context.Context, request gen.DcatCatalogRequestObject) (gen.DcatCatalogResponseObject, error) {
	return nil, notImplemented("dcatCatalog")
}

// ValidateDCATCatalog: Validate DCAT catalog (GET /datasets/dcat/validation/).
func (s *Server) ValidateDCATCatalog(ctx context.Context, request gen.ValidateDCATCatalogRequestObject) (gen.ValidateDCATCatalogResponseObject, error) {
	return nil, notImplemented("validateDCATCatalog")
}

// GeodcatAPCatalog: GeoDCAT-AP catalog (GET /datasets/geodcat-ap/).
func (s *Server) GeodcatAPCatalog(ctx context.Context, request gen.GeodcatAPCatalogRequestObject) (gen.GeodcatAPCatalogResponseObject, error) {
	return nil, notImplemented("geodcatAPCatalog")
}

// ValidateGeoDCATAPCatalog: Validate GeoDCAT-AP catalog (GET /datasets/geodcat-ap/validation/).
func (s *Server) ValidateGeoDCATAPCatalog(ctx context.Context, request gen.ValidateGeoDCATAPCatalogRequestObject) (gen.ValidateGeoDCATAPCatalogResponseObject, error) {
	return nil, notImplemented("validateGeoDCATAPCatalog")
}

// DcatUS3Record: DCAT-US 3 record (GET /datasets/{dataset_id}/dcat-us/3.0/).
func (s *Server) DcatUS3Record(ctx context.Context, request gen.DcatUS3RecordRequestObject) (gen.DcatUS3RecordResponseObject, error) {
	return nil, notImplemented("dcatUS3Record")
}

// ValidateDCATUS3Record: Validate DCAT-US 3 record (GET /datasets/{dataset_id}/dcat-us/3.0/validation/).
func (s *Server) ValidateDCATUS3Record(ctx context.Context, request gen.ValidateDCATUS3RecordRequestObject) (gen.ValidateDCATUS3RecordResponseObject, error) {
	return nil, notImplemented("validateDCATUS3Record")
}

// DcatRecord: DCAT record (GET /datasets/{dataset_id}/dcat/).
func (s *Server) DcatRecord(ctx context.Context, request gen.DcatRecordRequestObject) (gen.DcatRecordResponseObject, error) {
	return nil, notImplemented("dcatRecord")
}

// ValidateDCATRecord: Validate DCAT record (GET /datasets/{dataset_id}/dcat/validation/).
func (s *Server) ValidateDCATRecord(ctx context.Context, request gen.ValidateDCATRecordRequestObject) (gen.ValidateDCATRecordResponseObject, error) {
	return nil, notImplemented("validateDCATRecord")
}

// GeodcatAPRecord: GeoDCAT-AP record (GET /datasets/{dataset_id}/geodcat-ap/).
func (s *Server) GeodcatAPRecord(ctx context.Context, request gen.GeodcatAPRecordRequestObject) (gen.GeodcatAPRecordResponseObject, error) {
	return nil, notImplemented("geodcatAPRecord")
}

// ValidateGeoDCATAPRecord: Validate GeoDCAT-AP record (GET /datasets/{dataset_id}/geodcat-ap/validation/).
func (s *Server) ValidateGeoDCATAPRecord(ctx context.Context, request gen.ValidateGeoDCATAPRecordRequestObject) (gen.ValidateGeoDCATAPRecordResponseObject, error) {
	return nil, notImplemented("validateGeoDCATAPRecord")
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
