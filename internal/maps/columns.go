package maps

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"meridian/store"
)

// References of map layers to a dataset's columns: in MapLibre expressions (["get", col],
// ["has", col]) of filters, paint and layout; in the label, popup and style settings (members
// field, column, property, attribute, text_field, label_field; popup visible_fields and {col}
// in the popup expression). catalog's column operations rename and drop them through these
// methods, in their own transaction.

var fieldKeys = []string{"field", "column", "property", "attribute", "text_field", "label_field"}

// walk rewrites every reference to col in v: to the new name when rename is set, else it removes
// the referring member or element (nil stands for removed). It reports whether anything referred
// to col.
func walk(v any, col string, rename *string) (any, bool) {
	switch x := v.(type) {
	case []any:
		if len(x) >= 2 && (x[0] == "get" || x[0] == "has") && x[1] == col {
			if rename == nil {
				return nil, true
			}
			y := slices.Clone(x)
			y[1] = *rename
			return y, true
		}
		found := false
		out := make([]any, 0, len(x))
		for _, e := range x {
			e2, f := walk(e, col, rename)
			found = found || f
			if f && rename == nil && e2 == nil {
				continue
			}
			out = append(out, e2)
		}
		return out, found
	case map[string]any:
		found := false
		out := make(map[string]any, len(x))
		for k, e := range x {
			switch {
			case slices.Contains(fieldKeys, k) && e == col:
				found = true
				if rename != nil {
					out[k] = *rename
				}
				continue
			case k == "visible_fields":
				if list, ok := e.([]any); ok && slices.Contains(list, any(col)) {
					found = true
					list = slices.DeleteFunc(slices.Clone(list), func(f any) bool { return f == col })
					if rename != nil {
						list = append(list, *rename)
					}
					out[k] = list
					continue
				}
			case k == "expression":
				if s, ok := e.(string); ok && strings.Contains(s, "{"+col+"}") {
					found = true
					to := ""
					if rename != nil {
						to = "{" + *rename + "}"
					}
					out[k] = strings.ReplaceAll(s, "{"+col+"}", to)
					continue
				}
			}
			e2, f := walk(e, col, rename)
			found = found || f
			if f && rename == nil && e2 == nil {
				continue // a paint or layout property computed from the column goes
			}
			out[k] = e2
		}
		return out, found
	}
	return v, false
}

// rewrite applies walk to one JSON member; a dropped filter is no filter.
func rewrite(raw []byte, col string, rename *string, dropWhole bool) ([]byte, bool, error) {
	if len(raw) == 0 {
		return raw, false, nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return raw, false, err
	}
	out, found := walk(v, col, rename)
	if !found {
		return raw, false, nil
	}
	if rename == nil && dropWhole {
		return nil, true, nil
	}
	b, err := json.Marshal(out)
	return b, true, err
}

// columnRefs visits the layers of a dataset that refer to col and stores what change makes of
// them; it counts them.
func (s *Service) columnRefs(ctx context.Context, tx pgx.Tx, dataset uuid.UUID, col string, rename *string, write bool) (int, error) {
	q := s.Q.WithTx(tx)
	layers, err := q.LockDatasetLayers(ctx, dataset)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, l := range layers {
		prm := store.SetLayerStyleParams{ID: l.ID}
		var paint, layout []byte
		found := false
		for _, m := range []struct {
			src       []byte
			dst       *[]byte
			dropWhole bool
		}{{l.Paint, &paint, false}, {l.Layout, &layout, false}, {l.Filter, &prm.Filter, true},
			{l.LabelConfig, &prm.LabelConfig, true}, {l.PopupConfig, &prm.PopupConfig, false}, {l.StyleConfig, &prm.StyleConfig, true}} {
			out, f, err := rewrite(m.src, col, rename, m.dropWhole)
			if err != nil {
				return n, err
			}
			*m.dst, found = out, found || f
		}
		if !found {
			continue
		}
		prm.Paint, prm.Layout = paint, layout
		n++
		if write {
			if err := q.SetLayerStyle(ctx, prm); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// CountColumnRefs counts the layers that refer to a column of the dataset.
func (s *Service) CountColumnRefs(ctx context.Context, tx pgx.Tx, dataset uuid.UUID, col string) (int, error) {
	return s.columnRefs(ctx, tx, dataset, col, nil, false)
}

// RenameColumnRefs points the layers' references at the column's new name.
func (s *Service) RenameColumnRefs(ctx context.Context, tx pgx.Tx, dataset uuid.UUID, old, new string) (int, error) {
	return s.columnRefs(ctx, tx, dataset, old, &new, true)
}

// DropColumnRefs takes a dropped column out of the layers: filters, labels and style settings
// that use it go, paint and layout properties computed from it go, popups forget it.
func (s *Service) DropColumnRefs(ctx context.Context, tx pgx.Tx, dataset uuid.UUID, col string) (int, error) {
	return s.columnRefs(ctx, tx, dataset, col, nil, true)
}
