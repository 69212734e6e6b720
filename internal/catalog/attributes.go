package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/store"
)

// Attribute is the catalogue entry of a column: detected name, type, role, domain and sample
// values, and the describing fields a person may edit.
type Attribute struct {
	ID, DatasetID                      uuid.UUID
	FieldName                          string
	Title, Description, Units          *string
	DataType, DomainType, SemanticRole *string
	ExampleValues                      []any
	OrdinalPosition                    *int
	Current                            bool
	UserModified                       []string

	detected struct { // role and domain as detected from the column, for a reset
		Role   *string `json:"semantic_role"`
		Domain *string `json:"domain_type"`
	}
}

// AttributePatch is a partial change of the describing fields: present members change (a present
// nil clears) and count as set by a person.
type AttributePatch struct {
	Title, Description, Units, SemanticRole, DomainType *string
	Present                                             map[string]bool
}

func attributeOf(r store.CatalogDatasetAttribute) Attribute {
	a := Attribute{ID: r.ID, DatasetID: r.DatasetID, FieldName: r.FieldName, Title: r.Title, Description: r.Description,
		Units: r.Units, DataType: r.DataType, DomainType: r.DomainType, SemanticRole: r.SemanticRole, Current: r.IsCurrent,
		UserModified: r.UserModifiedFields}
	if r.OrdinalPosition != nil {
		n := int(*r.OrdinalPosition)
		a.OrdinalPosition = &n
	}
	if len(r.ExampleValues) > 0 {
		_ = json.Unmarshal(r.ExampleValues, &a.ExampleValues)
	}
	_ = json.Unmarshal(r.Detected, &a.detected)
	return a
}

// attributeDataset is the dataset for an attribute read (or, write, change), its catalogue
// brought in line with its columns first.
func (s *Service) attributeDataset(ctx context.Context, q *store.Queries, p auth.Principal, id uuid.UUID, write bool) (Dataset, error) {
	var d Dataset
	var err error
	if write {
		d, err = s.writable(ctx, q, p, id)
	} else {
		d, err = s.get(ctx, q, p, id, false)
	}
	if err != nil {
		return d, err
	}
	return d, q.SyncDatasetAttributes(ctx, id)
}

// Attributes lists a dataset's attribute catalogue in column order; removed columns' entries
// only with includeRemoved, after the current ones.
func (s *Service) Attributes(ctx context.Context, p auth.Principal, id uuid.UUID, includeRemoved bool) ([]Attribute, error) {
	if _, err := s.attributeDataset(ctx, s.Q, p, id, false); err != nil {
		return nil, err
	}
	rows, err := s.Q.ListDatasetAttributes(ctx, store.ListDatasetAttributesParams{DatasetID: id, IncludeRemoved: includeRemoved})
	out := make([]Attribute, len(rows))
	for i, r := range rows {
		out[i] = attributeOf(r)
	}
	return out, err
}

// GetAttribute returns one attribute of a dataset the caller may read.
func (s *Service) GetAttribute(ctx context.Context, p auth.Principal, id, attr uuid.UUID) (Attribute, error) {
	if _, err := s.attributeDataset(ctx, s.Q, p, id, false); err != nil {
		return Attribute{}, err
	}
	return s.attribute(ctx, s.Q, id, attr)
}

func (s *Service) attribute(ctx context.Context, q *store.Queries, id, attr uuid.UUID) (Attribute, error) {
	r, err := q.GetDatasetAttribute(ctx, store.GetDatasetAttributeParams{ID: attr, DatasetID: id})
	if errors.Is(err, pgx.ErrNoRows) {
		return Attribute{}, apperr.NotFound("attribute %s not found in this dataset", attr)
	}
	return attributeOf(r), err
}

// UpdateAttribute sets describing fields of an attribute; they then survive refreshes until reset.
func (s *Service) UpdateAttribute(ctx context.Context, p auth.Principal, id, attr uuid.UUID, ch AttributePatch) (Attribute, error) {
	return s.changeAttribute(ctx, p, id, attr, ActionAttributeUpdate, func(a Attribute) Attribute {
		patch(ch.Present["title"], &a.Title, ch.Title)
		patch(ch.Present["description"], &a.Description, ch.Description)
		patch(ch.Present["units"], &a.Units, ch.Units)
		patch(ch.Present["semantic_role"], &a.SemanticRole, ch.SemanticRole)
		patch(ch.Present["domain_type"], &a.DomainType, ch.DomainType)
		for _, f := range []string{"title", "description", "units", "semantic_role", "domain_type"} {
			if ch.Present[f] && !slices.Contains(a.UserModified, f) {
				a.UserModified = append(a.UserModified, f)
			}
		}
		return a
	})
}

// ResetAttribute discards a person's edits of an attribute: the describing fields empty, role
// and domain as detected. An attribute without edits is left as it is.
func (s *Service) ResetAttribute(ctx context.Context, p auth.Principal, id, attr uuid.UUID) (Attribute, error) {
	return s.changeAttribute(ctx, p, id, attr, ActionAttributeReset, func(a Attribute) Attribute {
		if len(a.UserModified) == 0 {
			return a
		}
		a.Title, a.Description, a.Units = nil, nil, nil
		a.SemanticRole, a.DomainType = a.detected.Role, a.detected.Domain
		a.UserModified = []string{}
		return a
	})
}

// changeAttribute applies change to an attribute of a dataset the caller may change, in one
// transaction with a new version and a history entry when anything changed.
func (s *Service) changeAttribute(ctx context.Context, p auth.Principal, id, attr uuid.UUID, action string, change func(Attribute) Attribute) (Attribute, error) {
	var out Attribute
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := s.Q.WithTx(tx)
		if _, err := s.attributeDataset(ctx, q, p, id, true); err != nil {
			return err
		}
		cur, err := s.attribute(ctx, q, id, attr)
		if err != nil {
			return err
		}
		next := change(cur)
		if equalAttribute(cur, next) {
			out = cur
			return nil
		}
		r, err := q.SetDatasetAttribute(ctx, store.SetDatasetAttributeParams{ID: attr, DatasetID: id, Title: next.Title,
			Description: next.Description, Units: next.Units, SemanticRole: next.SemanticRole, DomainType: next.DomainType,
			UserModifiedFields: next.UserModified})
		if err != nil {
			return err
		}
		out = attributeOf(r)
		return touch(ctx, q, p, id, action, map[string]any{"attributes": map[string]any{"old": cur, "new": out}})
	})
	return out, err
}

func equalAttribute(a, b Attribute) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
