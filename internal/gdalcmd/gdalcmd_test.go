package gdalcmd

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func needGDAL(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("ogrinfo"); err != nil {
		t.Skip("gdal-bin is not installed (make test installs it)")
	}
}

const point = `{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"a":1},"geometry":{"type":"Point","coordinates":[1,2]}}]}`

func TestEnvCarriesNothingOfTheServer(t *testing.T) {
	needGDAL(t)
	t.Setenv("DATABASE_URL", "postgres://meridian:secret@db/meridian")
	t.Setenv("JWT_SECRET_KEY", "a-very-secret-signing-key-of-the-server")
	env, err := Env([]string{"GeoJSON"}, "PGPASSWORD=only-this")
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(env, "\n")
	for _, leaked := range []string{"DATABASE_URL", "JWT_SECRET_KEY", "secret"} {
		if strings.Contains(joined, leaked) {
			t.Errorf("the GDAL environment carries %q", leaked)
		}
	}
	if !strings.Contains(joined, "PGPASSWORD=only-this") {
		t.Error("the extra variable is missing")
	}
}

func TestOnlyTheAllowedDriversOpenFiles(t *testing.T) {
	needGDAL(t)
	path := filepath.Join(t.TempDir(), "p.geojson")
	if err := os.WriteFile(path, []byte(point), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		allow []string
		opens bool
	}{
		{[]string{"GeoJSON"}, true},
		{[]string{"GPKG"}, false},
		{[]string{"CSV", "FlatGeobuf"}, false},
	} {
		cmd, err := Command(context.Background(), Limits{}, tc.allow, nil, "ogrinfo", "-ro", "-so", path)
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.CombinedOutput()
		if opened := err == nil && strings.Contains(string(out), "using driver `GeoJSON'"); opened != tc.opens {
			t.Errorf("allow %v: opened=%v, want %v\n%s", tc.allow, opened, tc.opens, out)
		}
	}
}

// A path that slipped through to GDAL still cannot make it fetch: the listener hears nothing.
// The same command without the confinement does reach it, so the test can fail.
func TestGDALCannotReachTheNetwork(t *testing.T) {
	needGDAL(t)
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte(point))
	}))
	defer srv.Close()
	url := "/vsicurl/" + srv.URL + "/p.geojson"

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd, err := Command(ctx, Limits{}, []string{"GeoJSON"}, nil, "ogrinfo", "-ro", "-so", url)
	if err != nil {
		t.Fatal(err)
	}
	_ = cmd.Run()
	if n := hits.Load(); n != 0 {
		t.Fatalf("confined GDAL sent %d request(s) to the listener", n)
	}

	bare := exec.CommandContext(ctx, "ogrinfo", "-ro", "-so", url)
	bare.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"}
	_ = bare.Run()
	if hits.Load() == 0 {
		t.Fatal("unconfined GDAL did not reach the listener either: the test proves nothing here")
	}
}

func TestTimeoutKillsTheProcessGroup(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	// The shell starts a grandchild and prints its pid; killing only the shell would leave it.
	cmd, err := Command(ctx, Limits{}, nil, nil, "sh", "-c", "sleep 60 & echo $!; wait")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	cmd.Stdout = &out
	start := time.Now()
	_ = cmd.Run()
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Run returned after %v", d)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(out.String()))
	if err != nil {
		t.Fatalf("no grandchild pid in %q", out.String())
	}
	deadline := time.Now().Add(2 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		// A killed child stays a zombie until reaped by init; check its state.
		if st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err != nil || strings.Contains(string(st), ") Z ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d still runs after the timeout", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The kernel stops a tool at each limit, and Exceeded names the limit it ran into; without the
// limits the same commands succeed, so the test can fail.
func TestLimitsStopTheToolAndAreNamed(t *testing.T) {
	needGDAL(t)
	dir := t.TempDir()
	// GDAL's KML driver builds the whole document in memory, about ten times its size.
	var kml strings.Builder
	kml.WriteString(`<?xml version="1.0"?><kml xmlns="http://www.opengis.net/kml/2.2"><Document><Folder><name>p</name>`)
	for i := range 250000 {
		kml.WriteString("<Placemark><name>p" + strconv.Itoa(i) + "</name><Point><coordinates>5,50</coordinates></Point></Placemark>\n")
	}
	kml.WriteString(`</Folder></Document></kml>`)
	big := filepath.Join(dir, "big.kml")
	if err := os.WriteFile(big, []byte(kml.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	tests := []struct {
		name       string
		lim        Limits
		allow      []string
		tool       string
		args       []string
		wantInName string
	}{
		{"memory", Limits{Memory: 256 << 20}, []string{"KML"}, "ogrinfo", []string{"-ro", "-so", "-al", big}, "GDAL_MEMORY_LIMIT"},
		{"cpu", Limits{CPU: time.Second}, nil, "sh", []string{"-c", "while :; do :; done"}, "GDAL_CPU_LIMIT"},
		{"file size", Limits{FileSize: 1 << 20}, nil, "sh", []string{"-c", "exec head -c 4194304 /dev/zero > " + out}, "EXPORT_MAX_BYTES"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd, err := Command(ctx, tt.lim, tt.allow, nil, tt.tool, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			output, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the tool ran to its end under %+v:\n%.500s", tt.lim, output)
			}
			if got := tt.lim.Exceeded(err, string(output)); !strings.Contains(got, tt.wantInName) {
				t.Fatalf("Exceeded = %q, want the limit %s named (%v: %.300s)", got, tt.wantInName, err, output)
			}
			if tt.name == "cpu" {
				return // it would never end without the limit
			}
			free, _ := Command(ctx, Limits{}, tt.allow, nil, tt.tool, tt.args...)
			if out, err := free.CombinedOutput(); err != nil {
				t.Fatalf("without limits the tool fails too, so the test proves nothing: %v %.300s", err, out)
			}
		})
	}
}
