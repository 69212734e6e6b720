// Package sources checks where datasets come from: a remote URL (through internal/remote, as
// the untrusted input it is), a registered table, a stored raster. Its outcome is the dataset's
// source_health.
package sources

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/blob"
	"meridian/internal/catalog"
	"meridian/internal/remote"
	"meridian/store"
)

// The outcomes of a check (interface spec 2.5).
const (
	Healthy      = "healthy"
	Missing      = "missing"
	Inaccessible = "inaccessible"
)

// Service checks sources.
type Service struct {
	Pool    *pgxpool.Pool
	Q       *store.Queries
	Catalog *catalog.Service
	Remote  *remote.Client
	Objects blob.Objects
	Jobs    Stager // where a remote layer is staged for import
}

// Health is a check's outcome as stored on the dataset.
type Health struct {
	DatasetID uuid.UUID
	Origin    *string
	Status    string
	Detail    string
	CheckedAt *time.Time
}

// Check probes dataset id's source now and stores the outcome. An unreachable source is an
// outcome, not an error; only the service's own storage failing is.
func (s *Service) Check(ctx context.Context, p auth.Principal, id uuid.UUID) (Health, error) {
	d, err := s.Catalog.Get(ctx, p, id, true)
	if err != nil {
		return Health{}, err
	}
	e := d.Entry
	var status, detail string
	switch raster, isRaster, _ := catalog.RasterOf(e); {
	case e.SourceUrl != nil && *e.SourceUrl != "":
		status, detail = s.remote(ctx, *e.SourceUrl, e)
	case isRaster:
		status, detail, err = s.stored(ctx, raster.StorageKey)
	default:
		status, detail, err = s.table(ctx, e)
	}
	if err != nil {
		return Health{}, err
	}
	at, err := s.Q.SetDatasetSourceHealth(ctx, store.SetDatasetSourceHealthParams{ID: id, SourceHealth: status, SourceHealthDetail: &detail})
	if err != nil {
		return Health{}, err
	}
	return Health{DatasetID: id, Origin: e.Origin, Status: status, Detail: detail, CheckedAt: at}, nil
}

// remote asks the source URL for its headers (HEAD; GET where HEAD is not served) under the
// remote policy, and says when it changed after the dataset's data did.
func (s *Service) remote(ctx context.Context, url string, e catalog.Entry) (string, string) {
	start := time.Now()
	res, err := s.Remote.Do(ctx, http.MethodHead, url, nil, nil)
	if err == nil && (res.Status == http.StatusMethodNotAllowed || res.Status == http.StatusNotImplemented) {
		res, err = s.Remote.Get(ctx, url, nil)
	}
	took := time.Since(start).Round(time.Millisecond)
	if err != nil {
		var ae *apperr.Error
		if errors.As(err, &ae) {
			return Inaccessible, ae.Detail
		}
		return Inaccessible, err.Error()
	}
	switch {
	case res.Status == http.StatusNotFound || res.Status == http.StatusGone:
		return Missing, fmt.Sprintf("the source answered %d %s", res.Status, http.StatusText(res.Status))
	case res.Status >= 300:
		return Inaccessible, fmt.Sprintf("the source answered %d %s", res.Status, http.StatusText(res.Status))
	}
	detail := []string{fmt.Sprintf("reachable in %s", took)}
	since := e.CreatedAt
	if e.LastRefreshedAt != nil {
		since = *e.LastRefreshedAt
	}
	if lm, err := http.ParseTime(res.Header.Get("Last-Modified")); err == nil {
		if lm.After(since) {
			detail = append(detail, "changed since the data was last loaded (Last-Modified "+lm.UTC().Format(time.RFC3339)+")")
		} else {
			detail = append(detail, "unchanged since the data was last loaded (Last-Modified "+lm.UTC().Format(time.RFC3339)+")")
		}
	}
	if tag := res.Header.Get("ETag"); tag != "" {
		detail = append(detail, "ETag "+tag)
	}
	return Healthy, strings.Join(detail, "; ")
}

// stored checks a raster's COG in the object store; a store that fails is the service's error.
func (s *Service) stored(ctx context.Context, key string) (string, string, error) {
	if s.Objects == nil || key == "" {
		return Missing, "the raster has no stored file", nil
	}
	o, err := s.Objects.Open(ctx, key)
	if errors.Is(err, blob.ErrNoObject) {
		return Missing, "the raster's stored file is gone", nil
	}
	if err != nil {
		return "", "", &apperr.Error{Kind: apperr.KindUpstream, Title: "Bad Gateway", Detail: "the object storage failed: " + err.Error()}
	}
	defer o.Close()
	return Healthy, fmt.Sprintf("stored file present (%d bytes)", o.Size()), nil
}

// table checks the dataset's table exists: a registered table can be dropped behind our back.
func (s *Service) table(ctx context.Context, e catalog.Entry) (string, string, error) {
	var ok bool
	if err := s.Pool.QueryRow(ctx, `SELECT to_regclass(format('%I.%I', $1::text, $2::text)) IS NOT NULL`, e.TableSchema, e.TableName).Scan(&ok); err != nil {
		return "", "", err
	}
	what := "the dataset's table"
	if e.Registered {
		what = "the registered table " + e.TableSchema + "." + e.TableName
	}
	if !ok {
		return Missing, what + " no longer exists", nil
	}
	return Healthy, what + " exists", nil
}
