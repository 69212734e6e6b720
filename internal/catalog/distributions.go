package catalog

import (
	"context"
	"errors"
	"net/url"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/store"
)

// Distribution is a way to get a record's data beyond the service's own exports: an external
// download or access point (dcat:Distribution).
type Distribution struct {
	ID, RecordID                            uuid.UUID
	Type, Format, URL                       string
	Title, Description, Protocol, MediaType *string
	Primary                                 bool
}

// DistributionPatch is a partial change: present members change (a present nil clears).
type DistributionPatch struct {
	Distribution
	Present map[string]bool
}

func (d Distribution) check() error {
	if strings.TrimSpace(d.Type) == "" || strings.TrimSpace(d.Format) == "" {
		return apperr.Unprocessable("distribution_type and format are required")
	}
	u, err := url.Parse(d.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return apperr.Unprocessable("url %q is not an absolute http or https URL", d.URL)
	}
	return nil
}

func distributionOf(r store.CatalogRecordDistribution, record uuid.UUID) Distribution {
	return Distribution{ID: r.ID, RecordID: record, Type: r.DistributionType, Format: r.Format, URL: r.Url, Title: r.Title,
		Description: r.Description, Protocol: r.Protocol, MediaType: r.MediaType, Primary: r.IsPrimary}
}

// Distributions lists a record's distributions in creation order.
func (s *Service) Distributions(ctx context.Context, p auth.Principal, recordID uuid.UUID, skip, limit int) ([]Distribution, int, error) {
	d, err := s.recordDataset(ctx, s.Q, p, recordID, false)
	if err != nil {
		return nil, 0, err
	}
	rows, err := s.Q.ListRecordDistributions(ctx, store.ListRecordDistributionsParams{DatasetID: d.row.ID, Off: int32(skip), Lim: int32(limit)})
	if err != nil {
		return nil, 0, err
	}
	return listPage(rows, skip, func(r store.ListRecordDistributionsRow) int64 { return r.Total },
		func() (int64, error) { return s.Q.CountRecordDistributions(ctx, d.row.ID) },
		func(r store.ListRecordDistributionsRow) Distribution {
			return distributionOf(r.CatalogRecordDistribution, d.row.RecordID)
		})
}

// AddDistribution adds a distribution to a record the caller may change; a primary one takes the
// place of the record's previous primary distribution.
func (s *Service) AddDistribution(ctx context.Context, p auth.Principal, recordID uuid.UUID, x Distribution) (Distribution, error) {
	if err := x.check(); err != nil {
		return Distribution{}, err
	}
	err := s.changeRecord(ctx, p, recordID, func(q *store.Queries, d Dataset) error {
		if x.Primary {
			if err := q.ClearPrimaryDistribution(ctx, store.ClearPrimaryDistributionParams{DatasetID: d.row.ID, Keep: uuid.Nil}); err != nil {
				return err
			}
		}
		r, err := q.AddRecordDistribution(ctx, store.AddRecordDistributionParams{DatasetID: d.row.ID, DistributionType: x.Type,
			Format: x.Format, Url: x.URL, Title: x.Title, Description: x.Description, Protocol: x.Protocol, MediaType: x.MediaType,
			IsPrimary: x.Primary})
		if err != nil {
			return err
		}
		x = distributionOf(r, d.row.RecordID)
		return touch(ctx, q, p, d.row.ID, ActionDistributionAdd, map[string]any{"distributions": change(nil, x.URL)})
	})
	return x, err
}

// UpdateDistribution applies a partial change to a distribution of a record the caller may change.
func (s *Service) UpdateDistribution(ctx context.Context, p auth.Principal, recordID, id uuid.UUID, ch DistributionPatch) (Distribution, error) {
	var out Distribution
	err := s.changeRecord(ctx, p, recordID, func(q *store.Queries, d Dataset) error {
		cur, err := q.GetRecordDistribution(ctx, store.GetRecordDistributionParams{ID: id, DatasetID: d.row.ID})
		if errors.Is(err, pgx.ErrNoRows) {
			return apperr.NotFound("distribution %s not found on this record", id)
		}
		if err != nil {
			return err
		}
		before := distributionOf(cur, d.row.RecordID)
		next := ch.merge(before)
		if err := next.check(); err != nil {
			return err
		}
		if next.Primary {
			if err := q.ClearPrimaryDistribution(ctx, store.ClearPrimaryDistributionParams{DatasetID: d.row.ID, Keep: id}); err != nil {
				return err
			}
		}
		r, err := q.UpdateRecordDistribution(ctx, store.UpdateRecordDistributionParams{ID: id, DatasetID: d.row.ID,
			DistributionType: next.Type, Format: next.Format, Url: next.URL, Title: next.Title, Description: next.Description,
			Protocol: next.Protocol, MediaType: next.MediaType, IsPrimary: next.Primary})
		if err != nil {
			return err
		}
		out = distributionOf(r, d.row.RecordID)
		return touch(ctx, q, p, d.row.ID, ActionDistributionUpdate, map[string]any{"distributions": change(before, out)})
	})
	return out, err
}

// merge is cur with the patch's present members applied; required members sent as null become
// empty, which check refuses.
func (ch DistributionPatch) merge(cur Distribution) Distribution {
	next, in := cur, ch.Present
	patch(in["distribution_type"], &next.Type, ch.Type)
	patch(in["format"], &next.Format, ch.Format)
	patch(in["url"], &next.URL, ch.URL)
	patch(in["title"], &next.Title, ch.Title)
	patch(in["description"], &next.Description, ch.Description)
	patch(in["protocol"], &next.Protocol, ch.Protocol)
	patch(in["media_type"], &next.MediaType, ch.MediaType)
	patch(in["is_primary"], &next.Primary, ch.Primary)
	return next
}

// DeleteDistribution removes a distribution from a record the caller may change.
func (s *Service) DeleteDistribution(ctx context.Context, p auth.Principal, recordID, id uuid.UUID) error {
	return s.changeRecord(ctx, p, recordID, func(q *store.Queries, d Dataset) error {
		u, err := q.DeleteRecordDistribution(ctx, store.DeleteRecordDistributionParams{ID: id, DatasetID: d.row.ID})
		if errors.Is(err, pgx.ErrNoRows) {
			return apperr.NotFound("distribution %s not found on this record", id)
		}
		if err != nil {
			return err
		}
		return touch(ctx, q, p, d.row.ID, ActionDistributionRemove, map[string]any{"distributions": change(u, nil)})
	})
}
