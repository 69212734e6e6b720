package catalog

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"

	"meridian/internal/testdb"
)

// catalog.dataset_visible is the one visibility rule of the database. It must stay an expression
// the planner inlines (a function body with a subquery is set up and planned again by every query
// that calls it, which cost a single-feature read most of its database time), and it must still
// say what it said before the grant lookup moved out of it.
func TestDatasetVisibleRuleInlines(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	var owner, grantee uuid.UUID
	if err := pool.QueryRow(ctx, `INSERT INTO catalog.users (username, email, role) VALUES ('owner', 'o@example.org', 'editor') RETURNING id`).Scan(&owner); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `INSERT INTO catalog.users (username, email, role) VALUES ('grantee', 'g@example.org', 'viewer') RETURNING id`).Scan(&grantee); err != nil {
		t.Fatal(err)
	}
	stranger := uuid.New()

	var plan strings.Builder
	rows, err := pool.Query(ctx, `EXPLAIN (VERBOSE, COSTS OFF) SELECT d.id FROM catalog.datasets d
		WHERE catalog.dataset_visible(d.id, d.visibility, d.record_status, d.created_by, $1::uuid, $2::text, false)`, owner, "viewer")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(line + "\n")
	}
	if rows.Err() != nil || strings.Contains(plan.String(), "dataset_visible(") || !strings.Contains(plan.String(), "dataset_granted(") {
		t.Fatalf("dataset_visible is not inlined (%v):\n%s", rows.Err(), plan.String())
	}

	tests := []struct {
		name, visibility, status string
		caller                   *uuid.UUID
		role                     string
		admin, grantUser         bool
		grantRole                string
		want                     bool
	}{
		{"anonymous, public published", "public", "published", nil, "", false, false, "", true},
		{"anonymous, public draft", "public", "draft", nil, "", false, false, "", false},
		{"anonymous, internal", "internal", "published", nil, "", false, false, "", false},
		{"signed in, internal", "internal", "published", &stranger, "viewer", false, false, "", true},
		{"owner, private draft", "private", "draft", &owner, "editor", false, false, "", true},
		{"stranger, private", "private", "published", &stranger, "viewer", false, false, "", false},
		{"admin, private draft", "private", "draft", &stranger, "admin", true, false, "", true},
		{"restricted without grant", "restricted", "published", &grantee, "viewer", false, false, "", false},
		{"restricted, user grant", "restricted", "published", &grantee, "viewer", false, true, "", true},
		{"restricted, role grant", "restricted", "published", &grantee, "viewer", false, false, "viewer", true},
		{"restricted, other role's grant", "restricted", "published", &grantee, "viewer", false, false, "editor", false},
		{"restricted, user grant, draft", "restricted", "draft", &grantee, "viewer", false, true, "", false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var id uuid.UUID
			err := pool.QueryRow(ctx, `INSERT INTO catalog.datasets (table_schema, table_name, title, visibility, record_type, record_status, created_by)
				VALUES ('data', $1, 't', $2, 'vector_dataset', $3, $4) RETURNING id`,
				"vis_"+strings.Repeat("x", i+1), tt.visibility, tt.status, owner).Scan(&id)
			if err != nil {
				t.Fatal(err)
			}
			if tt.grantUser {
				_, err = pool.Exec(ctx, `INSERT INTO catalog.dataset_grants (dataset_id, user_id) VALUES ($1, $2)`, id, grantee)
			} else if tt.grantRole != "" {
				_, err = pool.Exec(ctx, `INSERT INTO catalog.dataset_grants (dataset_id, role) VALUES ($1, $2)`, id, tt.grantRole)
			}
			if err != nil {
				t.Fatal(err)
			}
			var got bool
			err = pool.QueryRow(ctx, `SELECT catalog.dataset_visible(d.id, d.visibility, d.record_status, d.created_by, $2, $3, $4)
				FROM catalog.datasets d WHERE d.id = $1`, id, tt.caller, tt.role, tt.admin).Scan(&got)
			if err != nil || got != tt.want {
				t.Fatalf("visible = %v (%v), want %v", got, err, tt.want)
			}
		})
	}
}
