package handlers

// Operations of the Query tag.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"meridian/gen"
	"meridian/internal/auth"
	"meridian/internal/sqlquery"
	"meridian/internal/web"
)

// RunAReadOnlySQLQuery: Run a read-only SQL query (POST /query/).
func (s *Server) RunAReadOnlySQLQuery(ctx context.Context, request gen.RunAReadOnlySQLQueryRequestObject) (gen.RunAReadOnlySQLQueryResponseObject, error) {
	m := web.MetaFrom(ctx)
	res, err := s.sql.Run(ctx, auth.From(ctx), sqlquery.Request{SQL: request.Body.Sql, Tables: request.Body.RestrictTables,
		RowLimit: val(request.Body.RowLimit), IP: m.IP, UA: m.UserAgent})
	return sqlResult{res}, err
}

// sqlResult writes a query's rows as PostgreSQL wrote their values, so numerics keep every digit.
type sqlResult struct{ sqlquery.Result }

func (r sqlResult) VisitRunAReadOnlySQLQueryResponse(w http.ResponseWriter) error {
	cols, err := json.Marshal(r.Columns)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	b.WriteString(`{"columns":`)
	b.Write(cols)
	b.WriteString(`,"rows":[`)
	for i, row := range r.Rows {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(row)
	}
	fmt.Fprintf(&b, `],"row_count":%d,"truncated":%t}`, len(r.Rows), r.Truncated)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, err = w.Write(b.Bytes())
	return err
}
