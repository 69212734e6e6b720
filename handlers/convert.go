package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	openapi_types "github.com/oapi-codegen/runtime/types"

	"meridian/gen"
	"meridian/internal/accounts"
	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/catalog"
	"meridian/internal/ingest"
)

// merged fills a schema that extends others (allOf) from values of those schemas: each part is
// encoded and decoded into the result in turn, so the generated struct with every field of the
// parts need not be filled field by field. Only used by answers too rare for the cost to show.
func merged[T any](parts ...any) (T, error) {
	var out T
	for _, p := range parts {
		b, err := json.Marshal(p)
		if err != nil {
			return out, fmt.Errorf("merged: %w", err)
		}
		if err := json.Unmarshal(b, &out); err != nil {
			return out, fmt.Errorf("merged: %w", err)
		}
	}
	return out, nil
}

// userOut maps an account to the User schema.
func userOut(u accounts.User) gen.User {
	return gen.User{
		Id: u.ID, Username: u.Username, Email: openapi_types.Email(u.Email), Role: gen.UserRole(u.Role),
		Status: gen.UserStatus(u.Status), IsActive: u.Status == "active", EmailVerified: u.EmailVerified,
		HasPassword: u.HasPassword, LastLoginAt: u.LastLoginAt, CreatedAt: u.CreatedAt, Roles: []gen.UserRoles{gen.UserRoles(u.Role)},
	}
}

func keyCreatedOut(k auth.CreatedKey) gen.ApiKeyCreateResponse {
	return gen.ApiKeyCreateResponse{
		Id: k.ID, Name: k.Name, Key: k.Secret, Fingerprint: k.Fingerprint,
		Scope: gen.ApiKeyCreateResponseScope(k.Scope), ExpiresAt: k.ExpiresAt, CreatedAt: k.CreatedAt,
	}
}

// page clamps skip/limit: a limit above max is clamped rather than refused (open-points, paging).
func page(skip, limit *int, def, max int) (int, int) {
	s, l := 0, def
	if skip != nil && *skip > 0 {
		s = *skip
	}
	if limit != nil && *limit > 0 {
		l = *limit
	}
	if l > max {
		l = max
	}
	return s, l
}

// val dereferences an optional request field.
func val[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// nonEmpty is a response field that is null when the value is empty.
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// set overwrites *dst when a partial update carries the field.
func set[T any](dst *T, p *T) {
	if p != nil {
		*dst = *p
	}
}

// datasetOut maps a catalog record to DatasetResponse. has_generic_geometry is computed for the
// detail endpoint only; lists report false (spec 2.5).
func datasetOut(d catalog.Dataset, detail bool) gen.DatasetResponse {
	r := d.Entry
	generic := detail && r.HasGenericGeometry
	recordType := gen.DatasetRecordType(r.RecordType)
	health := gen.DatasetSourceHealth(r.SourceHealth)
	drift := gen.DatasetSchemaDriftStatus(r.SchemaDriftStatus)
	fresh := gen.DatasetSourceFreshness(catalog.Freshness(val(r.Origin), r.UpdateFrequency, r.LastRefreshedAt, time.Now()))
	version := int(r.CurrentVersion)
	status := r.RecordStatus
	out := gen.DatasetResponse{
		Id: r.ID, RecordId: r.RecordID, TableName: r.TableName, Title: r.Title, Summary: r.Summary,
		Srid: intp(r.Srid), OriginalSrid: intp(r.OriginalSrid), GeometryType: r.GeometryType, HasGenericGeometry: &generic,
		Is3d: r.Is3d, NDims: intp(r.NDims), ZMin: r.ZMin, ZMax: r.ZMax, FeatureCount: r.FeatureCount,
		License: r.License, Attribution: r.Attribution, SourceOrganization: r.SourceOrganization,
		QualityStatement: r.QualityStatement, SourceFormat: r.SourceFormat, SourceFilename: r.SourceFilename,
		CurrentVersion: &version, SourceUrl: r.SourceUrl, Origin: r.Origin, OriginUri: r.OriginUri,
		LastRefreshedAt: r.LastRefreshedAt, LastCheckedAt: r.LastCheckedAt, SourceHealth: &health,
		SourceHealthDetail: r.SourceHealthDetail, SchemaDriftStatus: &drift, SourceFreshness: &fresh,
		Visibility: gen.DatasetVisibility(r.Visibility), CreatedBy: r.CreatedBy, CreatedByDisplay: d.CreatedByDisplay,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, LastEditedByDisplay: d.LastEditedByDisplay, LastEditedAt: r.LastEditedAt,
		RecordStatus: &status, LineageSummary: r.LineageSummary, UpdateFrequency: r.UpdateFrequency,
		UsageConstraints: r.UsageConstraints, AccessConstraints: r.AccessConstraints,
		SensitivityClassification: r.SensitivityClassification, OwnerOrg: r.OwnerOrg, Language: r.Language,
		PublishedAt: r.PublishedAt, UpdatedBy: r.UpdatedBy, RecordType: &recordType,
	}
	optionalFields(r, &out)
	out.Raster = rasterOut(r)
	if w := d.MetadataWarnings(); len(w) > 0 {
		out.MetadataWarnings = &w
	}
	return out
}

// optionalFields fills the dataset's fields that are null when empty, and those stored as JSON.
func optionalFields(r catalog.Entry, out *gen.DatasetResponse) {
	if len(r.ExtentBbox) > 0 {
		out.ExtentBbox = &r.ExtentBbox
	}
	if len(r.ThemeCategory) > 0 {
		out.ThemeCategory = &r.ThemeCategory
	}
	if len(r.TileColumns) > 0 {
		out.TileColumns = &r.TileColumns
	}
	out.ColumnInfo = decoded[[]gen.ColumnInfo](r.ColumnInfo)
	out.QualityDetail = decoded[gen.QualityDetail](r.QualityDetail)
	out.OriginRef = decoded[map[string]any](r.OriginRef)
	out.DataVintageStart, out.DataVintageEnd = dateOut(r.DataVintageStart), dateOut(r.DataVintageEnd)
}

// decoded is a JSON column's value, nil when empty or not of the expected shape.
func decoded[T any](raw []byte) *T {
	var v T
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return nil
	}
	return &v
}

// dateOut is a date as the contract's nullable date.
func dateOut(t *time.Time) *openapi_types.Date {
	if t == nil {
		return nil
	}
	return &openapi_types.Date{Time: *t}
}

func grantOut(g catalog.Grant) gen.DatasetGrant {
	out := gen.DatasetGrant{Id: g.ID, UserId: g.UserID, Username: g.Username, Level: gen.DatasetGrantLevel(g.Level), CreatedAt: g.CreatedAt}
	if g.Role != nil {
		role := gen.DatasetGrantRole(*g.Role)
		out.Role = &role
	}
	return out
}

// int64p is a nullable count as the contract's nullable integer.
func int64p(v *int64) *int {
	if v == nil {
		return nil
	}
	n := int(*v)
	return &n
}

func intp(v *int32) *int {
	if v == nil {
		return nil
	}
	n := int(*v)
	return &n
}

// problemDetail is the caller-safe message of a domain error (per-item results of bulk calls).
func problemDetail(err error) string {
	var e *apperr.Error
	if errors.As(err, &e) && e.Kind != apperr.KindInternal {
		return e.Detail
	}
	return "the server could not complete this item; the request id identifies it in the logs"
}

func jobOut(j ingest.Job) gen.JobStatusResponse {
	out := gen.JobStatusResponse{Id: j.ID, Status: gen.JobStatusResponseStatus(j.Status), DatasetId: j.DatasetID,
		SourceFilename: j.SourceFilename, ErrorMessage: j.ErrorMessage, CanRetry: j.CanRetry, RetryReason: j.RetryReason,
		WarningMessage: j.WarningMessage, Progress: j.Progress, RowsProcessed: j.RowsProcessed, RowsFailed: j.RowsFailed,
		StartedAt: j.StartedAt, CompletedAt: j.CompletedAt, CreatedAt: j.CreatedAt}
	if j.CurrentStep != nil {
		step := gen.JobStatusResponseCurrentStep(*j.CurrentStep)
		out.CurrentStep = &step
	}
	var warnings []gen.JobWarning
	if json.Unmarshal(j.Warnings, &warnings) == nil && len(warnings) > 0 {
		out.Warnings = &warnings
	}
	if len(j.TemporalParseErrors) > 0 {
		out.TemporalParseErrors = &j.TemporalParseErrors
	}
	return out
}

// adminJobOut is a job as the admin list shows it: the job's fields, then who started it.
func adminJobOut(j ingest.Job) gen.AdminJobResponse {
	var out gen.AdminJobResponse
	b, _ := json.Marshal(jobOut(j)) // the same members, under the admin item's generated types
	_ = json.Unmarshal(b, &out)
	out.CreatedBy, out.Username = j.CreatedBy, j.Username
	return out
}

// ptr is a pointer to a copy of v.
func ptr[T any](v T) *T { return &v }
