package conformance

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// No connector is installed by default: the list is empty and none answers.
func TestNoConnectorsByDefault(t *testing.T) {
	u := newUser(t, "editor")
	if r := call(t, "GET", "/services/connectors/", nil, bearer(u.Access)...); r.Status != 200 || len(r.JSON(t)["connectors"].([]any)) != 0 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if r := call(t, "POST", "/services/connectors/postgis/discover/", map[string]any{"config": map[string]any{}}, bearer(u.Access)...); r.Status != 404 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
}

// elsewhere is a PostGIS database of the test cluster standing for one on another host: the
// connector's config to reach it, and a connection to fill it.
func elsewhere(t *testing.T) map[string]any {
	ctx := context.Background()
	dbURL, err := CreateDatabase(ctx, adminDBURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = DropDatabase(ctx, adminDBURL, dbURL) })
	conn := connect(t, dbURL)
	for _, sql := range []string{
		`CREATE EXTENSION IF NOT EXISTS postgis`,
		`CREATE SCHEMA field`,
		`CREATE TABLE field.wells (id serial PRIMARY KEY, name text, depth float8, geom geometry(Point, 3857))`,
		`INSERT INTO field.wells (name, depth, geom) SELECT 'w' || i, i * 1.5, ST_Transform(ST_SetSRID(ST_MakePoint(5 + i * 0.01, 50), 4326), 3857) FROM generate_series(1, 40) i`,
		`CREATE TABLE field.notes (id serial PRIMARY KEY, body text)`,
		`CREATE TABLE field."odd name" (id serial PRIMARY KEY, geom geometry(Point, 4326))`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	u, _ := url.Parse(dbURL)
	port, _ := strconv.Atoi(u.Port())
	pw, _ := u.User.Password()
	return map[string]any{"host": u.Hostname(), "port": port, "database": strings.TrimPrefix(u.Path, "/"), "user": u.User.Username(),
		"password": pw, "schema": "field", "sslmode": "disable"}
}

// The PostGIS connector, installed: discover a schema's tables with geometry, ingest one as a
// dataset in WGS 84 that names its source (never the password), refuse bad configurations.
func TestPostGISConnector(t *testing.T) {
	cfg := elsewhere(t)
	s := startFresh(t, "RATE_LIMIT_ENABLED=false", "REMOTE_ALLOW_PRIVATE=true", "CONNECTORS=postgis")
	hc := contractAt(t, s)
	tok := loginAt(t, hc, s.APIRoot, "admin", AdminPassword)
	list := callAt(t, hc, s.APIRoot, "GET", "/services/connectors/", nil, bearer(tok)...).JSON(t)["connectors"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["name"] != "postgis" || list[0].(map[string]any)["config_schema"].(map[string]any)["required"] == nil {
		t.Fatalf("%v", list)
	}
	r := callAt(t, hc, s.APIRoot, "POST", "/services/connectors/postgis/discover/", map[string]any{"config": cfg}, bearer(tok)...)
	res := r.JSON(t)["resources"].([]any)
	if r.Status != 200 || len(res) != 1 || res[0].(map[string]any)["id"] != "wells" || res[0].(map[string]any)["metadata"].(map[string]any)["srid"] != 3857.0 {
		t.Fatalf("discover: %d %s", r.Status, r.Body)
	}
	ing := callAt(t, hc, s.APIRoot, "POST", "/services/connectors/postgis/ingest/", map[string]any{"config": cfg, "resource_id": "wells"}, bearer(tok)...)
	if ing.Status != 202 || ing.JSON(t)["status"] != "queued" {
		t.Fatalf("ingest: %d %s", ing.Status, ing.Body)
	}
	job := waitJob(t, hc, s.APIRoot, tok, ing.JSON(t)["job_id"].(string), time.Minute, func(j map[string]any) bool { return j["status"] == "complete" || j["status"] == "failed" })
	d := callAt(t, hc, s.APIRoot, "GET", "/datasets/"+fmt.Sprint(job["dataset_id"]), nil, bearer(tok)...).JSON(t)
	src, _ := d["source_url"].(string)
	if d["feature_count"] != 40.0 || d["origin"] != "service" || !strings.HasPrefix(src, "postgresql://") || strings.Contains(fmt.Sprint(d), "password") {
		t.Fatalf("%v", d)
	}
	items := callAt(t, hc, s.APIRoot, "GET", "/collections/"+fmt.Sprint(job["dataset_id"])+"/items?limit=1&filter=name%3D%27w1%27", nil, bearer(tok)...).JSON(t)
	c := items["features"].([]any)[0].(map[string]any)["geometry"].(map[string]any)["coordinates"].([]any)[0].([]any) // a MultiPoint
	if math.Abs(c[0].(float64)-5.01) > 1e-6 || math.Abs(c[1].(float64)-50) > 1e-6 {
		t.Fatalf("not in WGS 84: %v", c)
	}
	for name, tc := range map[string]struct {
		op     string
		body   map[string]any
		status int
	}{
		"a config without a host":      {"discover", map[string]any{"config": map[string]any{"database": "x", "user": "y"}}, 422},
		"a config with unknown keys":   {"discover", map[string]any{"config": map[string]any{"host": "h", "database": "x", "user": "y", "dsn": "z"}}, 422},
		"a stored credential":          {"discover", map[string]any{"config": cfg, "credential_id": "c1"}, 422},
		"a table it does not offer":    {"ingest", map[string]any{"config": cfg, "resource_id": "notes"}, 404},
		"a database that is not there": {"discover", map[string]any{"config": withKey(cfg, "port", 1)}, 502},
	} {
		t.Run(name, func(t *testing.T) {
			if r := callAt(t, hc, s.APIRoot, "POST", "/services/connectors/postgis/"+tc.op+"/", tc.body, bearer(tok)...); r.Status != tc.status {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
		})
	}
}

func withKey(m map[string]any, k string, v any) map[string]any {
	out := map[string]any{}
	for kk, vv := range m {
		out[kk] = vv
	}
	out[k] = v
	return out
}

// Installed but with the default remote policy, the connector does not reach a private
// address: a database on the service's own network is not the caller's to read.
func TestPostGISConnectorKeepsToTheRemotePolicy(t *testing.T) {
	cfg := elsewhere(t)
	s := startFresh(t, "RATE_LIMIT_ENABLED=false", "CONNECTORS=postgis")
	hc := contractAt(t, s)
	tok := loginAt(t, hc, s.APIRoot, "admin", AdminPassword)
	if r := callAt(t, hc, s.APIRoot, "POST", "/services/connectors/postgis/discover/", map[string]any{"config": cfg}, bearer(tok)...); r.Status != 422 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
}
