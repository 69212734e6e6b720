package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// BenchmarkMaps reads a 50-layer map and lists 1,000 maps as a signed-in editor, 16 clients,
// beside the floor: the same answer from PostgreSQL through pgx in one statement (for Get Map the
// map_document function the server calls, for List Maps a hand-written page with the layer
// counts and the total). Layers alternate between the generated points and polygons datasets.
func BenchmarkMaps(b *testing.B) {
	d := ogcBenchSetup(b)
	conc := ogcBenchConcurrency()
	hc := benchClient(conc)
	userID, token := mapsBenchUser(b)
	ctx := context.Background()
	// 1,000 maps of the user's, one of them with 50 layers, made in SQL outside the timing.
	var mapID uuid.UUID
	err := d.base.QueryRow(ctx, `WITH made AS (
			INSERT INTO catalog.maps (name, basemap_style, visibility, created_by)
			SELECT 'Bench map ' || g, 'carto-positron', 'internal', $1 FROM generate_series(1, 1000) g RETURNING id)
		SELECT id FROM made LIMIT 1`, userID).Scan(&mapID)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := d.base.Exec(ctx, `INSERT INTO catalog.map_layers (map_id, dataset_id, sort_order, paint)
		SELECT $1, CASE WHEN g % 2 = 0 THEN $2::uuid ELSE $3::uuid END, g, '{"circle-color": "#336699"}' FROM generate_series(0, 49) g`,
		mapID, d.points.id, d.polygons.id); err != nil {
		b.Fatal(err)
	}
	cases := []struct {
		name, path, floor string
		args              []any
	}{
		{"get-map-50-layers", "/maps/" + mapID.String(),
			"SELECT catalog.map_document($1, $2, 'editor', false, '{}')", []any{mapID, userID}},
		{"list-maps-1000", "/maps/?limit=50",
			`SELECT json_build_object('maps', coalesce(json_agg(json_build_object('id', m.id, 'name', m.name, 'description', m.description,
				'visibility', m.visibility, 'layer_count', m.layer_count, 'created_by_username', m.username, 'created_at', m.created_at,
				'updated_at', m.updated_at)), '[]'), 'total', max(m.total))
			FROM (SELECT m.*, u.username, (SELECT count(*) FROM catalog.map_layers l WHERE l.map_id = m.id) AS layer_count, count(*) OVER () AS total
				FROM catalog.maps m LEFT JOIN catalog.users u ON u.id = m.created_by
				WHERE m.visibility IN ('public', 'internal') OR m.created_by = $1
				ORDER BY m.updated_at DESC, m.id LIMIT 50) m`, []any{userID}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			ours := func(ctx context.Context, _ ogcParams) (int64, bool, error) {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, server.APIRoot+c.path, nil)
				req.Header.Set("Authorization", "Bearer "+token)
				res, err := hc.Do(req)
				if err != nil {
					return 0, false, err
				}
				defer res.Body.Close()
				n, err := io.Copy(io.Discard, res.Body)
				if err == nil && res.StatusCode != 200 {
					err = fmt.Errorf("%s: %d", c.path, res.StatusCode)
				}
				return n, false, err
			}
			floor := func(ctx context.Context, _ ogcParams) (int64, bool, error) {
				var body []byte
				err := d.base.QueryRow(ctx, c.floor, c.args...).Scan(&body)
				return int64(len(body)), false, err
			}
			none := func(int) ogcParams { return ogcParams{} }
			for _, side := range []func(context.Context, ogcParams) (int64, bool, error){ours, floor} {
				if _, err := ogcRun(conc, 4*conc, none, side, d); err != nil {
					b.Fatal(err)
				}
			}
			sa, sb := abba(b, conc, 2*1000, func() ogcParams { return ogcParams{} }, ours, floor, d)
			b.ReportMetric(sa.rate(), "server-req/s")
			b.ReportMetric(sb.rate(), "floor-req/s")
			b.ReportMetric(sa.rate()/sb.rate(), "ratio")
			b.ReportMetric(sa.pct(0.50), "server-p50-ms")
			b.ReportMetric(sa.pct(0.95), "server-p95-ms")
			b.ReportMetric(sb.pct(0.95), "floor-p95-ms")
			b.ReportMetric(float64(sa.bytes)/float64(sa.n)/1024, "KiB/resp")
		})
	}
}

// mapsBenchUser makes an editor through the admin API and signs them in.
func mapsBenchUser(b *testing.B) (uuid.UUID, string) {
	b.Helper()
	admin, err := ogcAdminToken()
	if err != nil {
		b.Fatal(err)
	}
	name := "mapbench" + strings.ToLower(randomHex(3))
	body, _ := json.Marshal(map[string]any{"username": name, "email": name + "@example.org", "password": AdminPassword,
		"role": "editor", "email_verified": true})
	res, err := plain.Do(authed("POST", server.APIRoot+"/admin/users/", string(body), admin))
	if err != nil {
		b.Fatal(err)
	}
	var u struct {
		ID uuid.UUID `json:"id"`
	}
	decode(b, res, &u)
	res, err = plain.PostForm(server.APIRoot+"/auth/login", url.Values{"username": {name}, "password": {AdminPassword}})
	if err != nil {
		b.Fatal(err)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	decode(b, res, &tok)
	if u.ID == uuid.Nil || tok.AccessToken == "" {
		b.Fatal("could not make the benchmark's user")
	}
	return u.ID, tok.AccessToken
}
