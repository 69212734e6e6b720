package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"meridian/internal/apperr"
	"meridian/internal/audit"
	"meridian/internal/auth"
	"meridian/store"
)

// Column operations change a dataset table's schema: add, rename, retype, drop. Each runs in one
// transaction with the record's column list, tile columns, version and history entry (which the
// column DDL feed reads), and with the references of map layers to the column, which the
// ColumnRefs the service is given keeps (internal/maps).

// columnAudit names the column operations in the admin audit log, where they are the Maps tag's
// layer operations (client-semantics "Audit").
var columnAudit = map[string]string{
	ActionColumnAdd:       "layer.add_column",
	ActionColumnRename:    "layer.rename_column",
	ActionColumnAlterType: "layer.alter_column_type",
	ActionColumnDrop:      "layer.drop_column",
}

// ColumnRefs are the references of map layers to a dataset's columns, changed in the caller's
// transaction.
type ColumnRefs interface {
	CountColumnRefs(ctx context.Context, tx pgx.Tx, dataset uuid.UUID, column string) (int, error)
	RenameColumnRefs(ctx context.Context, tx pgx.Tx, dataset uuid.UUID, old, new string) (int, error)
	DropColumnRefs(ctx context.Context, tx pgx.Tx, dataset uuid.UUID, column string) (int, error)
}

// ColumnResult is a dataset's column list after a schema change.
type ColumnResult struct {
	Columns           []map[string]any
	Version           int32
	UpdatedReferences int
	NulledValues      int
}

// checkColumnName applies the naming rule of created datasets.
func checkColumnName(name string) error {
	switch {
	case !columnName.MatchString(name):
		return apperr.Unprocessable("column name %q: use 1 to 63 lowercase letters, digits and underscores, not starting with a digit", name)
	case slices.Contains(reservedColumns, name):
		return apperr.Unprocessable("column name %q is reserved", name)
	}
	return nil
}

// schemaChange runs fn on the dataset's table under the record's lock, then stores the column
// list fn leaves (columns: the record's, changed by fn) with a new version and the history entry.
func (s *Service) schemaChange(ctx context.Context, p auth.Principal, id uuid.UUID, action string, changes map[string]any,
	fn func(tx pgx.Tx, et editTarget, cols *[]map[string]any, tileCols *[]string) error) (ColumnResult, error) {
	et, err := s.editable(ctx, p, id)
	if err != nil {
		return ColumnResult{}, err
	}
	defer s.Forget(id)
	var out ColumnResult
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := s.Q.WithTx(tx)
		if _, err := q.LockDatasetForFeatureEdit(ctx, id); err != nil {
			return err
		}
		var cols []map[string]any
		_ = json.Unmarshal(et.d.row.ColumnInfo, &cols)
		tileCols := slices.Clone(et.d.row.TileColumns)
		if err := fn(tx, et, &cols, &tileCols); err != nil {
			return err
		}
		info, err := json.Marshal(cols)
		if err != nil {
			return err
		}
		if out.Version, err = q.SetDatasetColumns(ctx, store.SetDatasetColumnsParams{ID: id, ColumnInfo: info, TileColumns: tileCols,
			UpdatedBy: &p.UserID}); err != nil {
			return err
		}
		out.Columns = cols
		audit.Record(ctx, q, s.Log, audit.Entry{ActorID: p.UserID, ActorDisplay: p.Username, Action: columnAudit[action],
			ResourceType: "dataset", ResourceID: id.String(), Detail: changes})
		return history(ctx, q, id, out.Version, action, p, changes)
	})
	return out, schemaError(err)
}

// schemaError turns what PostgreSQL refuses in a schema change into the caller's error.
func schemaError(err error) error {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		switch pg.Code[:2] {
		case "22", "23", "42":
			return apperr.Unprocessable("the change cannot be made: %s", pg.Message)
		}
	}
	return err
}

func columnIndex(cols []map[string]any, name string) int {
	return slices.IndexFunc(cols, func(c map[string]any) bool { return c["name"] == name })
}

// AddColumn adds an attribute column of type (text, integer, float, date, boolean).
func (s *Service) AddColumn(ctx context.Context, p auth.Principal, id uuid.UUID, name, typ string) (ColumnResult, error) {
	name = strings.TrimSpace(name)
	if err := checkColumnName(name); err != nil {
		return ColumnResult{}, err
	}
	pgType, ok := columnTypes[typ]
	if !ok {
		return ColumnResult{}, apperr.Unprocessable("type %q is not one of text, integer, float, date, boolean", typ)
	}
	return s.schemaChange(ctx, p, id, ActionColumnAdd, map[string]any{"column": name, "type": typ},
		func(tx pgx.Tx, et editTarget, cols *[]map[string]any, _ *[]string) error {
			if _, err := et.t.Column(name); err == nil {
				return apperr.Conflict("the dataset already has a column %q", name)
			}
			if _, err := tx.Exec(ctx, "ALTER TABLE "+ident(et)+" ADD COLUMN "+pgx.Identifier{name}.Sanitize()+" "+pgType); err != nil {
				return err
			}
			*cols = append(*cols, map[string]any{"name": name, "type": typ})
			return nil
		})
}

func ident(et editTarget) string { return pgx.Identifier{et.t.Schema, et.t.Name}.Sanitize() }

// attribute finds an attribute column the operations may change (not the key or geometry).
func attribute(et editTarget, name string) error {
	if name == et.t.ID || name == et.t.Geom || slices.Contains(reservedColumns, name) {
		return apperr.Unprocessable("the column %q is the key or geometry of the dataset and cannot be changed", name)
	}
	if _, err := et.t.Column(name); err != nil {
		return err
	}
	return nil
}

// RenameColumn renames an attribute column, with its tile column entry and map layer references.
func (s *Service) RenameColumn(ctx context.Context, p auth.Principal, id uuid.UUID, old, name string) (ColumnResult, error) {
	if err := checkColumnName(name); err != nil {
		return ColumnResult{}, err
	}
	refs := 0
	out, err := s.schemaChange(ctx, p, id, ActionColumnRename, map[string]any{"column": change(old, name)},
		func(tx pgx.Tx, et editTarget, cols *[]map[string]any, tileCols *[]string) error {
			if err := attribute(et, old); err != nil {
				return err
			}
			if _, err := et.t.Column(name); err == nil {
				return apperr.Conflict("the dataset already has a column %q", name)
			}
			if _, err := tx.Exec(ctx, "ALTER TABLE "+ident(et)+" RENAME COLUMN "+pgx.Identifier{old}.Sanitize()+" TO "+pgx.Identifier{name}.Sanitize()); err != nil {
				return err
			}
			if i := columnIndex(*cols, old); i >= 0 {
				(*cols)[i]["name"] = name
			}
			if i := slices.Index(*tileCols, old); i >= 0 {
				(*tileCols)[i] = name
				refs++
			}
			n, err := s.Refs.RenameColumnRefs(ctx, tx, id, old, name)
			refs += n
			return err
		})
	out.UpdatedReferences = refs
	return out, err
}

// RetypeColumn changes an attribute column's type. With nullOnError, values that do not convert
// become null (and are counted); else one such value refuses the change (422).
func (s *Service) RetypeColumn(ctx context.Context, p auth.Principal, id uuid.UUID, name, typ string, nullOnError bool) (ColumnResult, error) {
	pgType, ok := columnTypes[typ]
	if !ok {
		return ColumnResult{}, apperr.Unprocessable("new_type %q is not one of text, integer, float, date, boolean", typ)
	}
	nulled := 0
	out, err := s.schemaChange(ctx, p, id, ActionColumnAlterType, map[string]any{"column": name, "type": typ},
		func(tx pgx.Tx, et editTarget, cols *[]map[string]any, _ *[]string) error {
			if err := attribute(et, name); err != nil {
				return err
			}
			col := pgx.Identifier{name}.Sanitize()
			bad := " FROM " + ident(et) + " WHERE " + col + " IS NOT NULL AND NOT catalog.input_is_valid(" + col + "::text, $1)"
			using := col + "::text::" + pgType // every type has a text form; the check above vouches for the rest
			if nullOnError {
				if err := tx.QueryRow(ctx, "SELECT count(*)"+bad, pgType).Scan(&nulled); err != nil {
					return err
				}
				using = "CASE WHEN catalog.input_is_valid(" + col + "::text, '" + pgType + "') THEN " + using + " END"
			} else {
				var gid any
				err := tx.QueryRow(ctx, "SELECT "+pgx.Identifier{et.t.ID}.Sanitize()+bad+" ORDER BY 1 LIMIT 1", pgType).Scan(&gid)
				if err == nil {
					return apperr.Unprocessable("the value of %s %v in column %q is no %s; nothing was changed (null_on_error sets such values to null)",
						et.t.ID, gid, name, typ)
				}
				if !errors.Is(err, pgx.ErrNoRows) {
					return err
				}
			}
			if _, err := tx.Exec(ctx, "ALTER TABLE "+ident(et)+" ALTER COLUMN "+col+" TYPE "+pgType+" USING "+using); err != nil {
				return err
			}
			if i := columnIndex(*cols, name); i >= 0 {
				(*cols)[i]["type"] = typ
			}
			return nil
		})
	out.NulledValues = nulled
	return out, err
}

// DropColumn drops an attribute column. Map layers using it refuse the drop (409) unless force,
// which takes the column out of them too.
func (s *Service) DropColumn(ctx context.Context, p auth.Principal, id uuid.UUID, name string, force bool) (ColumnResult, error) {
	return s.schemaChange(ctx, p, id, ActionColumnDrop, map[string]any{"column": name},
		func(tx pgx.Tx, et editTarget, cols *[]map[string]any, tileCols *[]string) error {
			if err := attribute(et, name); err != nil {
				return err
			}
			n, err := s.Refs.CountColumnRefs(ctx, tx, id, name)
			if err != nil {
				return err
			}
			if n > 0 && !force {
				return apperr.Conflict("%d map layer(s) use the column %q; drop it with force=true to take it out of them too", n, name)
			}
			if _, err := s.Refs.DropColumnRefs(ctx, tx, id, name); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, "ALTER TABLE "+ident(et)+" DROP COLUMN "+pgx.Identifier{name}.Sanitize()); err != nil {
				return err
			}
			if i := columnIndex(*cols, name); i >= 0 {
				*cols = slices.Delete(*cols, i, i+1)
			}
			*tileCols = slices.DeleteFunc(*tileCols, func(c string) bool { return c == name })
			return nil
		})
}

// ColumnReferences counts the map layers that use a column of a dataset p may read.
func (s *Service) ColumnReferences(ctx context.Context, p auth.Principal, id uuid.UUID, name string) (int, error) {
	d, err := s.Get(ctx, p, id, false)
	if err != nil {
		return 0, err
	}
	t, err := d.Table()
	if err != nil {
		return 0, err
	}
	if _, err := t.Column(name); err != nil {
		return 0, err
	}
	var n int
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		n, err = s.Refs.CountColumnRefs(ctx, tx, id, name)
		return err
	})
	return n, err
}
