package conformance

import (
	"context"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// GDAL's OGC API Features driver, as QGIS uses it, against the running server.

// ogr runs a GDAL vector tool with extra environment (config options) and returns its output.
func ogr(t *testing.T, env []string, tool string, args ...string) string {
	t.Helper()
	cmd := exec.Command(tool, args...)
	cmd.Env = append(cmd.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", tool, args, err, out)
	}
	return string(out)
}

func TestGDALReadsCollections(t *testing.T) {
	owner := newUser(t, "editor")
	public := ogcDataset(t, owner, "public")
	private := ogcDataset(t, owner, "private")
	root := "OAPIF:" + server.APIRoot

	// The public collection is listed to an anonymous client; the private one is not.
	list := ogr(t, nil, "ogrinfo", "-ro", "-q", root)
	if !strings.Contains(list, public) || strings.Contains(list, private) {
		t.Fatalf("ogrinfo lists:\n%s\nwant %s and not %s", list, public, private)
	}

	// A copy of several pages keeps every feature and attribute.
	dir := t.TempDir()
	out := filepath.Join(dir, "copy.gpkg")
	ogr(t, nil, "ogr2ogr", "-f", "GPKG", out, root, public, "-nln", "places", "-oo", "PAGE_SIZE=7")
	got := ogr(t, nil, "ogrinfo", "-ro", "-q", "-al", "-dialect", "SQLite", "-sql",
		"SELECT count(*) AS n, sum(rank) AS ranks, sum(score) AS scores, group_concat(DISTINCT kind) AS kinds, min(day) AS first, max(day) AS last, "+
			"sum(name = 'place ' || substr('0' || rank, -2)) AS names_match FROM places", out)
	for _, want := range []string{"n (Integer) = 30", "ranks (Integer) = 435", "scores (Real) = 108.75", "first (String) = 2020-01-01",
		"last (String) = 2020-01-28", "names_match (Integer) = 30"} {
		if !strings.Contains(got, want) {
			t.Errorf("copied GeoPackage lacks %q:\n%s", want, got)
		}
	}
	ext := ogr(t, nil, "ogrinfo", "-ro", "-q", "-al", "-dialect", "SQLite", "-sql",
		"SELECT min(ST_MinX(geom)) AS minx, max(ST_MaxY(geom)) AS maxy FROM places", out)
	if !strings.Contains(ext, "minx (Real) = -170") || !strings.Contains(ext, "maxy (Real) = 32.5") {
		t.Errorf("copied geometries: %s", ext)
	}

	// A CQL2 filter passed on the connection URL is sent with every request, next pages included,
	// and the server answers the subset.
	filtered := filepath.Join(dir, "cities.gpkg")
	filter := url.Values{"filter": {"kind = 'city' AND rank < 20"}, "filter-lang": {"cql2-text"}}.Encode()
	ogr(t, nil, "ogr2ogr", "-f", "GPKG", filtered, root+"/collections/"+public+"?"+filter, "-nln", "cities", "-oo", "PAGE_SIZE=2")
	sub := ogr(t, nil, "ogrinfo", "-ro", "-q", "-al", "-dialect", "SQLite", "-sql",
		"SELECT count(*) AS n, sum(kind = 'city') AS cities, max(rank) AS top FROM cities", filtered)
	if !strings.Contains(sub, "n (Integer) = 7") || !strings.Contains(sub, "cities (Integer) = 7") || !strings.Contains(sub, "top (Integer) = 19") {
		t.Errorf("filtered copy:\n%s", sub)
	}

	// The private collection needs a key, sent through GDAL's header option.
	key, _ := newKey(t, owner, "read_only")
	withKey := []string{"GDAL_HTTP_HEADERS=X-Api-Key: " + key}
	if list := ogr(t, withKey, "ogrinfo", "-ro", "-q", root); !strings.Contains(list, private) {
		t.Errorf("with a key, ogrinfo lists:\n%s", list)
	}
	if n := ogr(t, withKey, "ogrinfo", "-ro", "-so", root, private); !strings.Contains(n, "Feature Count: 30") {
		t.Errorf("private collection with a key:\n%s", n)
	}
	cmd := exec.CommandContext(context.Background(), "ogrinfo", "-ro", "-so", root, private)
	if out, err := cmd.CombinedOutput(); err == nil && strings.Contains(string(out), "Feature Count") {
		t.Errorf("the private collection opened without a key:\n%s", out)
	}
}
