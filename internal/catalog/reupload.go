package catalog

// Reupload (issue 33): a new version of a dataset's data from a file, under the same id and table
// name. internal/ingest loads the file and swaps the tables; the catalog says who may do it and
// writes the record's side of the swap.

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/store"
)

// Reuploadable is the dataset p may replace the data of: the rule of editing it (write access
// and edit_metadata: 404 when invisible, 403 otherwise), plus the upload capability a file needs,
// then the dataset's state. A raster answers 422: its pixels are a COG of its own import and
// are not swapped for another file's (upload the new raster as a dataset of its own). A VRT or
// another record without a table, or a registered table (the operator's), answers 409, as does a
// dataset whose import, reupload or refresh is queued or running. The feature-editing flag is
// not consulted: a reupload replaces a dataset as an upload creates one.
func (s *Service) Reuploadable(ctx context.Context, p auth.Principal, id uuid.UUID) (Dataset, error) {
	d, err := s.writable(ctx, s.Q, p, id)
	if err != nil {
		return d, err
	}
	if !p.Can(auth.CapUpload) {
		return d, apperr.Forbidden("reuploading needs the upload capability")
	}
	switch {
	case d.row.RecordType == "raster_dataset":
		return d, apperr.Unprocessable("a raster dataset is not reuploaded: its data is the COG made at its import; " +
			"upload the new raster as a dataset of its own")
	case d.row.RecordType != "vector_dataset" && d.row.RecordType != "table":
		return d, apperr.Conflict("a %s has no table of its own to replace", d.row.RecordType)
	case d.row.Registered:
		return d, apperr.Conflict("the dataset is a registered table, which belongs to its operator: it is not replaced through the catalog")
	}
	running, err := s.Q.DatasetImportRunning(ctx, &id)
	if err != nil {
		return d, err
	}
	if running {
		return d, apperr.Conflict("an import, reupload or refresh of this dataset is queued or running; try again when it has finished")
	}
	return d, nil
}

// Replacement is the record's side of a reupload: the new table's description, the columns it
// no longer has and what else the history entry should say.
type Replacement struct {
	Data    store.ReplaceDatasetDataParams // its ID and TileColumns are ReplaceRecord's
	Removed []string
	Changes map[string]any
	// Refresh marks a refresh from the source (history action dataset.refresh) rather than a
	// reupload.
	Refresh bool
}

// ReplaceRecord writes a reupload into the record of dataset old, inside the transaction that
// swaps the tables: map layers forget the removed columns as a forced column drop makes them
// (refs: their filters, labels and style rules on those columns go, paint and layout computed
// from them go, popups forget them), relationships joining on them go, tile columns keep the
// surviving ones, the record describes the new table with a new data version, and the history
// has its dataset.reupload entry. It answers the new version.
func ReplaceRecord(ctx context.Context, tx pgx.Tx, refs ColumnRefs, old store.CatalogDataset, r Replacement, p auth.Principal) (int32, error) {
	q := store.New(tx)
	for _, c := range r.Removed {
		if _, err := refs.DropColumnRefs(ctx, tx, old.ID, c); err != nil {
			return 0, err
		}
	}
	if len(r.Removed) > 0 {
		if _, err := q.DropRelationshipsOnColumns(ctx, store.DropRelationshipsOnColumnsParams{DatasetID: old.ID, Columns: r.Removed}); err != nil {
			return 0, err
		}
	}
	r.Data.ID = old.ID
	r.Data.TileColumns = slices.DeleteFunc(slices.Clone(old.TileColumns), func(c string) bool { return slices.Contains(r.Removed, c) })
	version, err := q.ReplaceDatasetData(ctx, r.Data)
	if err != nil {
		return 0, err
	}
	action := ActionDatasetReupload
	if r.Refresh {
		action = ActionDatasetRefresh
	}
	return version, history(ctx, q, old.ID, version, action, p, replacementChanges(old, r))
}

// replacementChanges is the history entry of a reupload: the fields Get Dataset Versions shows
// (their new values) with the old ones, and the caller's additions.
func replacementChanges(old store.CatalogDataset, r Replacement) map[string]any {
	var cols any
	_ = json.Unmarshal(r.Data.ColumnInfo, &cols)
	ch := map[string]any{"feature_count": change(old.FeatureCount, r.Data.FeatureCount),
		"source_filename": change(old.SourceFilename, r.Data.SourceFilename), "source_format": change(old.SourceFormat, r.Data.SourceFormat),
		"srid": change(old.Srid, r.Data.Srid), "geometry_type": change(old.GeometryType, r.Data.GeometryType), "columns": change(nil, cols)}
	for k, v := range r.Changes {
		ch[k] = v
	}
	return ch
}
