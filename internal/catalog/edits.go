package catalog

// Feature edits: one feature of a dataset's table created, changed or deleted, and in the same
// transaction the record's count, extent, version and last editor, and a history entry.

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/features"
	"meridian/internal/settings"
	"meridian/store"
)

// FeatureWrite is the body of a feature write.
type FeatureWrite struct {
	Properties map[string]any
	// Geometry is GeoJSON in WGS 84; nil or null for no geometry.
	Geometry json.RawMessage
	// SetGeometry says whether the geometry is written at all (a patch may leave it).
	SetGeometry bool
}

// ErrEditingDisabled answers every feature write while the enable_dataset_editing flag is off.
var ErrEditingDisabled = apperr.Forbidden("dataset editing is disabled on this deployment (feature flag enable_dataset_editing)")

// editTarget is a dataset open for a feature edit, its table and what its geometry column takes.
type editTarget struct {
	d    Dataset
	t    features.Table
	spec features.GeometrySpec
}

// editable checks, in order: the feature flag (403), the caller's write access and edit_metadata
// (404 when the dataset is invisible, 403 otherwise), then the dataset's state (409: a raster,
// VRT or other non-vector record, a registered table, which stays the operator's, or an import
// of the dataset queued or running).
func (s *Service) editable(ctx context.Context, p auth.Principal, id uuid.UUID) (editTarget, error) {
	flags, err := settings.Reader{Q: s.Q}.FeatureFlags(ctx)
	if err != nil {
		return editTarget{}, err
	}
	if !flags.EnableDatasetEditing {
		return editTarget{}, ErrEditingDisabled
	}
	d, err := s.writable(ctx, s.Q, p, id)
	if err != nil {
		return editTarget{}, err
	}
	switch {
	case d.row.RecordType != "vector_dataset" && d.row.RecordType != "table":
		return editTarget{}, apperr.Conflict("a %s has no features to edit", d.row.RecordType)
	case d.row.Registered:
		return editTarget{}, apperr.Conflict("the dataset is a registered table, which belongs to its operator: its features are not edited through the catalog")
	}
	running, err := s.Q.DatasetImportRunning(ctx, &id)
	if err != nil {
		return editTarget{}, err
	}
	if running {
		return editTarget{}, apperr.Conflict("an import of this dataset is queued or running; edit its features when it has finished")
	}
	t, err := features.TableOf(d.row.TableSchema, d.row.TableName, d.row.IDColumn, d.row.GeometryColumn, d.TableColumns)
	if err != nil {
		return editTarget{}, err
	}
	spec, err := features.Reader{Pool: s.Pool}.GeometryOf(ctx, t)
	return editTarget{d: d, t: t, spec: spec}, err
}

// prepared is a write checked outside the transaction: the property values as the write
// functions take them and the geometry in the column's CRS.
type prepared struct {
	values []byte
	names  []string
	ewkb   []byte
}

func (s *Service) prepare(ctx context.Context, et editTarget, w FeatureWrite) (prepared, error) {
	r := features.Reader{Pool: s.Pool}
	var pw prepared
	var err error
	if pw.values, pw.names, err = r.CheckProperties(ctx, et.t, w.Properties); err != nil {
		return pw, err
	}
	if w.SetGeometry {
		pw.ewkb, err = r.PrepareGeometry(ctx, et.spec, w.Geometry)
	}
	return pw, err
}

// edit runs fn in a transaction that holds the dataset's record, then, when fn reports a change,
// recomputes the count and extent, moves the version on, records the editor and writes the
// history entry (action, changes plus the count).
func (s *Service) edit(ctx context.Context, p auth.Principal, et editTarget, fn func(tx pgx.Tx) (action string, changes map[string]any, err error)) error {
	defer s.Forget(et.d.row.ID) // this server's next tile shows the edit
	return pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := s.Q.WithTx(tx)
		before, err := q.LockDatasetForFeatureEdit(ctx, et.d.row.ID)
		if errors.Is(err, pgx.ErrNoRows) {
			return apperr.NotFound("dataset %s not found", et.d.row.ID)
		}
		if err != nil {
			return err
		}
		action, changes, err := fn(tx)
		if err != nil || action == "" {
			return err
		}
		ext, err := features.TableExtent(ctx, tx, et.t, et.spec.SRID)
		if err != nil {
			return err
		}
		var editor *uuid.UUID
		if !p.Anonymous() {
			editor = &p.UserID
		}
		version, err := q.RecordFeatureEdit(ctx, store.RecordFeatureEditParams{ID: et.d.row.ID, FeatureCount: &ext.Count,
			ExtentBbox: ext.BBox, SetZ: et.spec.Z, ZMin: ext.ZMin, ZMax: ext.ZMax, EditedBy: editor})
		if err != nil {
			return err
		}
		if before == nil || *before != ext.Count {
			changes["feature_count"] = change(before, ext.Count)
		}
		return history(ctx, q, et.d.row.ID, version, action, p, changes)
	})
}

// CreateFeature adds a feature; properties not given get their column's default (or null).
func (s *Service) CreateFeature(ctx context.Context, p auth.Principal, id uuid.UUID, w FeatureWrite) (features.GeoFeature, error) {
	et, err := s.editable(ctx, p, id)
	if err != nil {
		return features.GeoFeature{}, err
	}
	w.SetGeometry = true
	pw, err := s.prepare(ctx, et, w)
	if err != nil {
		return features.GeoFeature{}, err
	}
	var out features.GeoFeature
	err = s.edit(ctx, p, et, func(tx pgx.Tx) (string, map[string]any, error) {
		gid, err := features.InsertFeature(ctx, tx, et.t, pw.values, pw.names, pw.ewkb)
		if err != nil {
			return "", nil, err
		}
		before, err := features.LockFeature(ctx, tx, et.t, gid)
		out = before.Feature
		return ActionFeatureInsert, map[string]any{"gid": change(nil, gid)}, err
	})
	return out, err
}

// UpdateFeature changes a feature: a patch sets the given properties (and the geometry when
// w.SetGeometry), a replacement (replace) sets every property, null where not given, and the
// geometry. An edit that changes nothing adds no version and no history entry.
func (s *Service) UpdateFeature(ctx context.Context, p auth.Principal, id uuid.UUID, gid int64, w FeatureWrite, replace bool) (features.GeoFeature, error) {
	et, err := s.editable(ctx, p, id)
	if err != nil {
		return features.GeoFeature{}, err
	}
	if replace {
		w.SetGeometry = true
	}
	pw, err := s.prepare(ctx, et, w)
	if err != nil {
		return features.GeoFeature{}, err
	}
	var out features.GeoFeature
	err = s.edit(ctx, p, et, func(tx pgx.Tx) (string, map[string]any, error) {
		before, err := features.LockFeature(ctx, tx, et.t, gid)
		if err != nil {
			return "", nil, err
		}
		after, diff, err := features.UpdateFeature(ctx, tx, et.t, before, pw.values, pw.names, w.SetGeometry, pw.ewkb, replace)
		if err != nil {
			return "", nil, err
		}
		out = after
		if len(diff) == 0 {
			return "", nil, nil
		}
		changes := map[string]any{"gid": change(gid, gid)}
		for k, v := range diff {
			changes[k] = change(v[0], v[1])
		}
		action := ActionFeatureUpdate
		if replace {
			action = ActionFeatureReplace
		}
		return action, changes, nil
	})
	return out, err
}

// DeleteFeature removes a feature.
func (s *Service) DeleteFeature(ctx context.Context, p auth.Principal, id uuid.UUID, gid int64) error {
	et, err := s.editable(ctx, p, id)
	if err != nil {
		return err
	}
	return s.edit(ctx, p, et, func(tx pgx.Tx) (string, map[string]any, error) {
		if err := features.DeleteFeature(ctx, tx, et.t, gid); err != nil {
			return "", nil, err
		}
		return ActionFeatureDelete, map[string]any{"gid": change(gid, nil)}, nil
	})
}
