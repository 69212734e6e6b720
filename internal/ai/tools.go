package ai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/catalog"
	"meridian/internal/features"
	"meridian/internal/sqlquery"
)

// The tools the assistant may call. Every one runs as the caller, through the functions the API
// runs the same reads with (catalog reads and search, column statistics, the read-only SQL
// sandbox): a dataset the caller may not read is not found for the assistant either, whatever a
// prompt or a dataset's own text asked for. Nothing here acts as a service identity.

// Client is who asks, for the audit trail of what the tools run (read-only SQL).
type Client struct{ IP, UA string }

// toolFunc runs a tool: its result for the model (JSON), a summary for the stream's tool_result
// event, or an error the model is told about.
type toolFunc func(ctx context.Context, args json.RawMessage) (result any, summary string, err error)

type toolbox struct {
	specs []ToolSpec
	funcs map[string]toolFunc
}

func (b *toolbox) add(spec ToolSpec, f toolFunc) {
	if b.funcs == nil {
		b.funcs = map[string]toolFunc{}
	}
	b.specs = append(b.specs, spec)
	b.funcs[spec.Name] = f
}

// run runs a call and answers what the model reads back, the summary and whether it worked. A
// failure is the model's to handle: it hears why in words, the caller's answer goes on.
func (b *toolbox) run(ctx context.Context, call ToolCall) (string, string, bool) {
	f, ok := b.funcs[call.Name]
	if !ok {
		return `{"error":"there is no tool named ` + strings.ReplaceAll(call.Name, `"`, "") + `"}`, "unknown tool", false
	}
	res, summary, err := f(ctx, call.Args)
	if err != nil {
		msg := "the tool failed"
		var ae *apperr.Error
		if errors.As(err, &ae) && ae.Kind != apperr.KindInternal {
			msg = ae.Detail
		}
		b, _ := json.Marshal(map[string]string{"error": msg})
		return string(b), clip(msg, 160), false
	}
	out, err := json.Marshal(res)
	if err != nil {
		return `{"error":"the result could not be encoded"}`, "failed", false
	}
	if len(out) > maxToolResult {
		out, _ = json.Marshal(map[string]any{"truncated": true, "partial": string(out[:maxToolResult])})
	}
	return string(out), summary, true
}

// decodeArgs reads a call's arguments into v, or says what is wrong with them.
func decodeArgs(args json.RawMessage, v any) error {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if err := json.Unmarshal(args, v); err != nil {
		return apperr.Invalid("the arguments are not the JSON object the tool takes: %v", err)
	}
	return nil
}

// parseID reads a dataset id the model sent; a malformed one is not found, as the API answers.
func parseID(s string) (uuid.UUID, error) {
	id, err := uuid.Parse(strings.TrimSpace(s))
	if err != nil {
		return uuid.Nil, apperr.NotFound("dataset not found")
	}
	return id, nil
}

// searchTool searches the catalog as the caller; only restricts it to some datasets when set.
func (s *Service) searchTool(p auth.Principal, only []uuid.UUID) (ToolSpec, toolFunc) {
	spec := ToolSpec{Name: "search_catalog",
		Description: "Search the catalog records the user may read by words (titles, summaries, keywords, columns). Answers up to `limit` records with their id, title, summary, geometry type, feature count, keywords and extent.",
		Properties: map[string]any{
			"query": map[string]any{"type": "string", "description": "words to search for"},
			"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": 20, "description": "records to return (default 8)"},
		}, Required: []string{"query"}}
	return spec, func(ctx context.Context, raw json.RawMessage) (any, string, error) {
		var in struct {
			Query string `json:"query"`
			Limit int    `json:"limit"`
		}
		if err := decodeArgs(raw, &in); err != nil {
			return nil, "", err
		}
		limit := in.Limit
		if limit <= 0 || limit > 20 {
			limit = 8
		}
		q := catalog.RecordQuery{Text: clip(strings.TrimSpace(in.Query), 500), Limit: limit, IDs: only}
		recs, total, err := s.Catalog.Records(ctx, p, q)
		if err != nil {
			return nil, "", err
		}
		if len(recs) == 0 && q.Text != "" && len(only) > 0 {
			// Among a few datasets the user chose, all of them are candidates whatever the words.
			q.Text = ""
			recs, total, err = s.Catalog.Records(ctx, p, q)
			if err != nil {
				return nil, "", err
			}
		}
		items := make([]map[string]any, len(recs))
		for i, r := range recs {
			items[i] = map[string]any{"id": r.DatasetID, "title": r.Title, "summary": clip(deref(r.Summary), 300),
				"record_type": r.RecordType, "geometry_type": r.GeometryType, "feature_count": r.FeatureCount,
				"keywords": r.Keywords, "bbox": r.BBox}
		}
		return map[string]any{"matched": total, "records": items}, fmt.Sprintf("%d records found", len(items)), nil
	}
}

// describeTool describes a dataset the caller may read; fixed, when set, is the only one.
func (s *Service) describeTool(p auth.Principal, st Setup, fixed *uuid.UUID) (ToolSpec, toolFunc) {
	spec := ToolSpec{Name: "describe_dataset",
		Description: "Describe a dataset the user may read: metadata, extent, columns with their types and statistics" +
			map[bool]string{true: " and sample values", false: ""}[st.SendSampleValues] + ", and the table name to query.",
		Properties: map[string]any{"dataset_id": map[string]any{"type": "string", "description": "the dataset's id"}},
		Required:   []string{"dataset_id"}}
	return spec, func(ctx context.Context, raw json.RawMessage) (any, string, error) {
		var in struct {
			DatasetID string `json:"dataset_id"`
		}
		if err := decodeArgs(raw, &in); err != nil {
			return nil, "", err
		}
		id, err := parseID(in.DatasetID)
		if err != nil {
			return nil, "", err
		}
		if fixed != nil && id != *fixed {
			return nil, "", apperr.NotFound("dataset not found: this conversation is about dataset %s only", *fixed)
		}
		d, facts, err := s.describe(ctx, p, st, id)
		if err != nil {
			return nil, "", err
		}
		return facts, "described " + clip(d.Entry.Title, 80), nil
	}
}

// statsTool answers the statistics of a column of a dataset the caller may read. Its most
// frequent values are dataset values: they are answered only when samples may be sent.
func (s *Service) statsTool(p auth.Principal, st Setup) (ToolSpec, toolFunc) {
	spec := ToolSpec{Name: "column_stats",
		Description: "Statistics of one column of a dataset the user may read: count, nulls, distinct values, min, max, mean, quartiles" +
			map[bool]string{true: ", histogram and most frequent values", false: " and histogram"}[st.SendSampleValues] + ".",
		Properties: map[string]any{"dataset_id": map[string]any{"type": "string"}, "column": map[string]any{"type": "string"}},
		Required:   []string{"dataset_id", "column"}}
	return spec, func(ctx context.Context, raw json.RawMessage) (any, string, error) {
		var in struct {
			DatasetID string `json:"dataset_id"`
			Column    string `json:"column"`
		}
		if err := decodeArgs(raw, &in); err != nil {
			return nil, "", err
		}
		id, err := parseID(in.DatasetID)
		if err != nil {
			return nil, "", err
		}
		d, err := s.Catalog.Get(ctx, p, id, false)
		if err != nil {
			return nil, "", err
		}
		t, err := features.TableOf(d.Entry.TableSchema, d.Entry.TableName, d.Entry.IDColumn, d.Entry.GeometryColumn, d.TableColumns)
		if err != nil {
			return nil, "", err
		}
		stats, err := s.Tables.ColumnStats(ctx, t, in.Column, features.DefaultClasses)
		if err != nil {
			return nil, "", err
		}
		if !st.SendSampleValues {
			stats.TopValues = nil
		}
		return stats, "statistics of " + clip(in.Column, 60), nil
	}
}

// queryTool runs a read-only query through the SQL sandbox as the caller (grants, row security,
// time and size limits, audit: the Query operation's path). Offered only when dataset values may
// be sent to the provider.
func (s *Service) queryTool(p auth.Principal, client Client) (ToolSpec, toolFunc) {
	spec := ToolSpec{Name: "query_dataset",
		Description: "Run one read-only SQL SELECT over dataset tables the user may read (PostgreSQL with PostGIS; name tables as data.<table>, as describe_dataset gives them). Answers at most 50 rows.",
		Properties: map[string]any{
			"sql":    map[string]any{"type": "string", "description": "one SELECT statement"},
			"tables": map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "the tables the statement reads (data.<table>)"},
		}, Required: []string{"sql", "tables"}}
	return spec, func(ctx context.Context, raw json.RawMessage) (any, string, error) {
		var in struct {
			SQL    string   `json:"sql"`
			Tables []string `json:"tables"`
		}
		if err := decodeArgs(raw, &in); err != nil {
			return nil, "", err
		}
		res, err := s.SQL.Run(ctx, p, sqlquery.Request{SQL: in.SQL, Tables: in.Tables, RowLimit: 50, IP: client.IP, UA: client.UA})
		if err != nil {
			return nil, "", err
		}
		return map[string]any{"columns": res.Columns, "rows": res.Rows, "truncated": res.Truncated},
			fmt.Sprintf("%d rows", len(res.Rows)), nil
	}
}

// readable reports the datasets among ids the caller may read.
func (s *Service) readable(ctx context.Context, p auth.Principal, ids []uuid.UUID) ([]catalog.Dataset, error) {
	var out []catalog.Dataset
	for _, id := range ids {
		d, err := s.Catalog.Get(ctx, p, id, false)
		if apperr.KindOf(err) == apperr.KindNotFound {
			continue
		}
		if err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(out, func(x catalog.Dataset) bool { return x.Entry.ID == id }) {
			out = append(out, d)
		}
	}
	return out, nil
}
