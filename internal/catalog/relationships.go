package catalog

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/features"
	"meridian/store"
)

// Relationship declares that a column of the source dataset holds values of a column of the
// target, like a foreign key.
type Relationship struct {
	ID, Source, Target         uuid.UUID
	SourceColumn, TargetColumn string
	Type                       string
	Label                      *string
	TargetTitle                string
	CreatedAt                  time.Time
}

// RelatedDataset is a dataset linked to another, with how near the link is (1 a declared
// relationship, 0.5 a shared catalog collection).
type RelatedDataset struct {
	ID                uuid.UUID
	Title, RecordType string
	GeometryType      *string
	FeatureCount      *int64
	Similarity        float64
}

// AddRelationship declares a relationship from a dataset the caller may change to one it may
// read; both columns must exist (the key counts) and be comparable, and a pair is declared once.
func (s *Service) AddRelationship(ctx context.Context, p auth.Principal, source uuid.UUID, r Relationship) (Relationship, error) {
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := s.Q.WithTx(tx)
		src, err := s.writable(ctx, q, p, source)
		if err != nil {
			return err
		}
		dst, err := s.get(ctx, q, p, r.Target, false)
		if err != nil {
			return err
		}
		if err := relatable(src, dst, r.SourceColumn, r.TargetColumn); err != nil {
			return err
		}
		row, err := q.AddDatasetRelationship(ctx, store.AddDatasetRelationshipParams{SourceDatasetID: source, TargetDatasetID: r.Target,
			SourceColumn: r.SourceColumn, TargetColumn: r.TargetColumn, Label: r.Label, CreatedBy: &p.UserID})
		if uniqueViolation(err) {
			return apperr.Conflict("this relationship between %s and %s is declared already", r.SourceColumn, r.TargetColumn)
		}
		if err != nil {
			return err
		}
		r = relationshipOf(row, dst.row.Title)
		return touch(ctx, q, p, source, ActionRelationshipAdd, map[string]any{"relationships": change(nil, r)})
	})
	return r, err
}

// relatable checks that both columns exist and their values can be matched.
func relatable(src, dst Dataset, srcCol, dstCol string) error {
	st, err := src.Table()
	if err != nil {
		return err
	}
	dt, err := dst.Table()
	if err != nil {
		return err
	}
	a, errA := st.KeyColumn(srcCol)
	b, errB := dt.KeyColumn(dstCol)
	switch {
	case errA != nil:
		return apperr.Unprocessable("source_column: the dataset has no column %q", srcCol)
	case errB != nil:
		return apperr.Unprocessable("target_column: the target dataset has no column %q", dstCol)
	case !features.Comparable(a, b):
		return apperr.Unprocessable("%s (%s) and %s (%s) hold values of different kinds", srcCol, a.Type, dstCol, b.Type)
	}
	return nil
}

func relationshipOf(r store.CatalogDatasetRelationship, targetTitle string) Relationship {
	return Relationship{ID: r.ID, Source: r.SourceDatasetID, Target: r.TargetDatasetID, SourceColumn: r.SourceColumn,
		TargetColumn: r.TargetColumn, Type: r.RelationshipType, Label: r.Label, TargetTitle: targetTitle, CreatedAt: r.CreatedAt}
}

// Relationships lists a dataset's relationships (outgoing: it is the source; incoming: the
// target) whose other dataset the caller may read.
func (s *Service) Relationships(ctx context.Context, p auth.Principal, id uuid.UUID, outgoing, incoming bool, skip, limit int) ([]Relationship, int, error) {
	if _, err := s.Get(ctx, p, id, false); err != nil {
		return nil, 0, err
	}
	caller, role := who(p)
	rows, err := s.Q.ListDatasetRelationships(ctx, store.ListDatasetRelationshipsParams{DatasetID: id, Outgoing: outgoing, Incoming: incoming,
		CallerID: caller, CallerRole: role, IsAdmin: p.IsAdmin(), Off: int32(skip), Lim: int32(limit)})
	out := make([]Relationship, len(rows))
	total := 0
	for i, r := range rows {
		out[i] = relationshipOf(store.CatalogDatasetRelationship{ID: r.ID, SourceDatasetID: r.SourceDatasetID, TargetDatasetID: r.TargetDatasetID,
			SourceColumn: r.SourceColumn, TargetColumn: r.TargetColumn, RelationshipType: r.RelationshipType, Label: r.Label,
			CreatedAt: r.CreatedAt}, r.TargetTitle)
		total = int(r.Total)
	}
	return out, total, err
}

// relationship reads a relationship; its callers then check access to its datasets.
func (s *Service) relationship(ctx context.Context, q *store.Queries, id uuid.UUID) (store.CatalogDatasetRelationship, error) {
	r, err := q.GetDatasetRelationship(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, apperr.NotFound("relationship %s not found", id)
	}
	return r, err
}

// DeleteRelationship deletes a relationship of a source dataset the caller may change.
func (s *Service) DeleteRelationship(ctx context.Context, p auth.Principal, id uuid.UUID) error {
	return pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := s.Q.WithTx(tx)
		r, err := s.relationship(ctx, q, id)
		if err != nil {
			return err
		}
		if _, err := s.writable(ctx, q, p, r.SourceDatasetID); err != nil {
			return err
		}
		if _, err := q.DeleteDatasetRelationship(ctx, id); err != nil {
			return err
		}
		return touch(ctx, q, p, r.SourceDatasetID, ActionRelationshipRemove, map[string]any{"relationships": change(relationshipOf(r, ""), nil)})
	})
}

// RelatedRows follows a relationship from one feature of a dataset at either end: the other
// dataset's rows whose column holds the feature's value. The caller must read both datasets.
func (s *Service) RelatedRows(ctx context.Context, p auth.Principal, id uuid.UUID, gid string, relID uuid.UUID, q features.RowsQuery) (features.RowsPage, error) {
	r, err := s.relationship(ctx, s.Q, relID)
	if err != nil {
		return features.RowsPage{}, err
	}
	own, other, otherID := r.SourceColumn, r.TargetColumn, r.TargetDatasetID
	switch id {
	case r.SourceDatasetID:
	case r.TargetDatasetID:
		own, other, otherID = r.TargetColumn, r.SourceColumn, r.SourceDatasetID
	default:
		return features.RowsPage{}, apperr.NotFound("relationship %s does not link this dataset", relID)
	}
	d, err := s.Get(ctx, p, id, false)
	if err != nil {
		return features.RowsPage{}, err
	}
	o, err := s.Get(ctx, p, otherID, false)
	if err != nil {
		return features.RowsPage{}, err
	}
	t, err := d.Table()
	if err != nil {
		return features.RowsPage{}, err
	}
	ot, err := o.Table()
	if err != nil {
		return features.RowsPage{}, err
	}
	reader := features.Reader{Pool: s.Pool}
	v, err := reader.ValueOf(ctx, t, gid, own)
	if err != nil || v == nil { // a feature without a value relates to nothing
		return features.RowsPage{Key: ot.ID, Rows: []map[string]any{}, Columns: ot.Columns}, err
	}
	q.Equal = &features.ColumnValue{Column: other, Value: v}
	return reader.Rows(ctx, ot, q)
}

// RelatedDatasets lists the datasets linked to one the caller may read, nearest first.
func (s *Service) RelatedDatasets(ctx context.Context, p auth.Principal, id uuid.UUID) ([]RelatedDataset, error) {
	if _, err := s.Get(ctx, p, id, false); err != nil {
		return nil, err
	}
	caller, role := who(p)
	rows, err := s.Q.ListRelatedDatasets(ctx, store.ListRelatedDatasetsParams{DatasetID: id, CallerID: caller, CallerRole: role, IsAdmin: p.IsAdmin()})
	out := make([]RelatedDataset, len(rows))
	for i, r := range rows {
		out[i] = RelatedDataset{ID: r.ID, Title: r.Title, RecordType: r.RecordType, GeometryType: r.GeometryType,
			FeatureCount: r.FeatureCount, Similarity: r.Similarity}
	}
	return out, err
}
