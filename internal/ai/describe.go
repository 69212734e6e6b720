package ai

import (
	"context"
	"encoding/json"

	"github.com/google/uuid"

	"meridian/internal/auth"
	"meridian/internal/catalog"
)

// describe is what the assistant learns of a dataset the caller may read: its metadata, schema
// and column statistics, and its columns' sample values only when ai_send_sample_values allows
// dataset values to reach the provider. A dataset the caller may not read is not found, as the
// API answers it.
func (s *Service) describe(ctx context.Context, p auth.Principal, st Setup, id uuid.UUID) (catalog.Dataset, map[string]any, error) {
	d, err := s.Catalog.Get(ctx, p, id, false)
	if err != nil {
		return d, nil, err
	}
	e := d.Entry
	out := map[string]any{
		"id": e.ID, "title": e.Title, "summary": e.Summary, "record_type": e.RecordType,
		"table": e.TableSchema + "." + e.TableName, "geometry_type": e.GeometryType, "srid": e.Srid,
		"feature_count": e.FeatureCount, "extent_bbox": e.ExtentBbox, "license": e.License,
		"attribution": e.Attribution, "source_organization": e.SourceOrganization, "source_format": e.SourceFormat,
		"source_filename": e.SourceFilename, "origin": e.Origin, "lineage": e.LineageSummary,
		"quality_statement": e.QualityStatement, "update_frequency": e.UpdateFrequency, "language": e.Language,
		"themes": e.ThemeCategory, "data_vintage_start": e.DataVintageStart, "data_vintage_end": e.DataVintageEnd,
		"created_at": e.CreatedAt, "updated_at": e.UpdatedAt, "last_refreshed_at": e.LastRefreshedAt,
		"columns": columnsOf(e.ColumnInfo, d.TableColumns, e, st.SendSampleValues),
	}
	if len(e.QualityDetail) > 0 {
		out["quality_detail"] = json.RawMessage(e.QualityDetail)
	}
	if len(e.Raster) > 0 {
		out["raster"] = json.RawMessage(e.Raster)
	}
	if kws, _, err := s.Catalog.Keywords(ctx, p, id, 0, 100); err == nil {
		words := make([]string, len(kws))
		for i, k := range kws {
			words[i] = k.Keyword
		}
		out["keywords"] = words
	}
	return d, out, nil
}

// columnsOf are the columns as the assistant sees them: the ingest's column profile (name,
// type, roles, statistics) without sample values unless samples may be sent; else the table's
// columns by name and type.
func columnsOf(info, table []byte, e catalog.Entry, samples bool) []map[string]any {
	var cols []map[string]any
	if err := json.Unmarshal(info, &cols); err == nil && len(cols) > 0 {
		for _, c := range cols {
			if !samples {
				delete(c, "sample_values")
				if st, ok := c["stats"].(map[string]any); ok {
					delete(st, "top_values")
					delete(st, "sample_values")
				}
			}
		}
		return cols
	}
	var pairs [][2]string
	_ = json.Unmarshal(table, &pairs)
	for _, pr := range pairs {
		if pr[0] == e.IDColumn || pr[0] == e.GeometryColumn {
			continue
		}
		cols = append(cols, map[string]any{"name": pr[0], "type": pr[1]})
	}
	return cols
}
