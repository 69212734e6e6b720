package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"meridian/internal/cog"
	"meridian/internal/rastertiles/rastertest"
)

// rasterBench are the benchmark's COGs, made once and kept under .data/bench-rasters (minutes
// of GDAL each), and their datasets on the shared server.
type rasterBench struct {
	rgb, dem         string // COG paths
	rgbID, demID     string
	rgbZoom, demZoom int
	rgbTiles         [4]int // x0, y0, x1, y1 of the full resolution's XYZ tiles
	demTiles         [4]int
}

var (
	rasterBenchOnce  sync.Once
	rasterBenchState *rasterBench
	rasterBenchErr   error
)

// The RGB COG: 20000 x 20000 pixels of three bytes at zoom 16 (about 48 km a side), textured
// with noise so that it compresses about as an orthophoto does; the DEM: 10000 x 10000 float32
// elevations at zoom 15 with a nodata hole. Both in EPSG:3857 on the grid, compressed as raster
// ingest stores by default (ZSTD with a predictor, ingest.DefaultCompression).
func rasterBenchSetup(b *testing.B) *rasterBench {
	b.Helper()
	rasterBenchOnce.Do(func() { rasterBenchState, rasterBenchErr = rasterBenchMake(b) })
	if rasterBenchErr != nil {
		b.Fatal(rasterBenchErr)
	}
	return rasterBenchState
}

func rasterBenchMake(b *testing.B) (*rasterBench, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, ".data", "bench-rasters")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	rb := &rasterBench{rgb: filepath.Join(dir, "rgb-20000-zstd.tif"), dem: filepath.Join(dir, "dem-10000-zstd.tif"), rgbZoom: 16, demZoom: 15}
	noise := func(x, y int) float64 {
		h := fnv.New32a()
		fmt.Fprint(h, x, y)
		return float64(h.Sum32()%24) - 12
	}
	make1 := func(path string, z, size int, s rastertest.Spec) ([4]int, error) {
		x0, y0 := 34000>>(16-z), 22000>>(16-z)
		s.SRS, s.Width, s.Height, s.Res = "EPSG:3857", size, size, cog.PixelSize(z)
		s.West, s.North = -cog.WorldHalf+float64(x0*256)*s.Res, cog.WorldHalf-float64(y0*256)*s.Res
		tiles := [4]int{x0, y0, x0 + (size-1)/256, y0 + (size-1)/256}
		if _, err := os.Stat(path); err == nil {
			return tiles, nil
		}
		start := time.Now()
		if err := rastertest.Make(path+".part", s); err != nil {
			return tiles, err
		}
		b.Logf("made %s in %s", path, time.Since(start).Round(time.Second))
		return tiles, os.Rename(path+".part", path)
	}
	rb.rgbTiles, err = make1(rb.rgb, rb.rgbZoom, 20000, rastertest.Spec{Bands: 3, DType: "Byte", Compress: "ZSTD", Predictor: true,
		Value: func(x, y, band int) float64 {
			return math.Max(0, math.Min(255, rastertest.RGB(x, y, band)+noise(x, y)))
		}})
	if err != nil {
		return nil, err
	}
	nodata := -9999.0
	rb.demTiles, err = make1(rb.dem, rb.demZoom, 10000, rastertest.Spec{Bands: 1, DType: "Float32", NoData: &nodata, Compress: "ZSTD", Predictor: true,
		Value: func(x, y, _ int) float64 {
			if dx, dy := x-5000, y-5000; dx*dx+dy*dy < 400*400 {
				return nodata
			}
			return rastertest.DEM(x, y) + noise(x, y)/10
		}})
	if err != nil {
		return nil, err
	}
	token, err := ogcAdminToken()
	if err != nil {
		return nil, err
	}
	me, err := ogcAdminID(token)
	if err != nil {
		return nil, err
	}
	for _, d := range []struct {
		path string
		id   *string
	}{{rb.rgb, &rb.rgbID}, {rb.dem, &rb.demID}} {
		if *d.id, err = rasterBenchDataset(me, d.path); err != nil {
			return nil, err
		}
	}
	return rb, nil
}

// ogcAdminID is the admin's user id.
func ogcAdminID(token string) (string, error) {
	res, err := plain.Do(authed(http.MethodGet, server.APIRoot+"/auth/me/", "", token))
	if err != nil {
		return "", err
	}
	var me struct {
		ID string `json:"id"`
	}
	defer res.Body.Close()
	err = json.NewDecoder(res.Body).Decode(&me)
	return me.ID, err
}

// rasterBenchDataset records a public raster dataset whose COG is path (linked, not copied), as
// rasterDataset does for the tests.
func rasterBenchDataset(owner, path string) (string, error) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, server.DBURL)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	var id string
	if err := conn.QueryRow(ctx, `INSERT INTO catalog.datasets
		(table_name, title, record_type, visibility, record_status, created_by, published_at)
		VALUES ('raster_' || substr(md5(random()::text), 1, 10), 'Bench raster', 'raster_dataset', 'public', 'published', $1, now())
		RETURNING id`, owner).Scan(&id); err != nil {
		return "", err
	}
	// The record names its COG as raster ingest does (the object store's key, under DATA_DIR).
	if _, err := conn.Exec(ctx, `UPDATE catalog.datasets SET raster = jsonb_build_object('storage_key',
		'rasters/' || id || '/v1.tif', 'bands', '[]'::jsonb) WHERE id = $1`, id); err != nil {
		return "", err
	}
	dir := filepath.Join(server.dataDir, "rasters", id)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", err
	}
	return id, os.Symlink(path, filepath.Join(dir, "v1.tif"))
}

// rasterLoad runs n requests over conc clients and returns their latencies and the rate.
func rasterLoad(conc, n int, do func(i int) error) (lat []time.Duration, rate float64, err error) {
	lat = make([]time.Duration, n)
	var next atomic.Int64
	var first atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				t0 := time.Now()
				if e := do(i); e != nil {
					first.CompareAndSwap(nil, e)
				}
				lat[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	if e, ok := first.Load().(error); ok {
		err = e
	}
	return lat, float64(n) / time.Since(start).Seconds(), err
}

// BenchmarkRasterTiles puts raster tiles under load, 16 clients, side by side with GDAL making
// the same tiles the way a naive tile server would: one gdal_translate -projwin ... -of PNG
// process per tile, its input in the page cache (warm). Cases:
//
//   - rgb/z16: the 20000 x 20000 RGB COG's full resolution, uncached (tile cache off);
//   - rgb/z14: an overview GDAL did not align with the XYZ grid (up to four internal tiles a
//     tile), uncached;
//   - dem/z15: the float DEM through a stretch and the viridis ramp, uncached; GDAL scales it
//     to grey (-ot Byte -scale), no ramp, which is less work than ours;
//   - rgb/z16-cached: 64 tiles over and over from a warm cache (GDAL has no cache).
//
// Reported: the server's p50 and p95 latency, rate and CPU time per tile, GDAL's rate and the
// ratio.
// BENCH_RASTER_REQUESTS overrides the server's requests per iteration (GDAL's are a tenth).
func BenchmarkRasterTiles(b *testing.B) {
	rb := rasterBenchSetup(b)
	const conc = 16
	hc := benchClient(conc)
	token, err := ogcAdminToken()
	if err != nil {
		b.Fatal(err)
	}
	cases := []struct {
		name     string
		id, path string
		zoom     int
		tiles    [4]int
		dz       int // zoom below the full resolution's
		query    string
		gdal     []string
		cached   bool
		requests int
	}{
		{name: "rgb/z16", id: rb.rgbID, path: rb.rgb, zoom: rb.rgbZoom, tiles: rb.rgbTiles, requests: 2000},
		{name: "rgb/z14", id: rb.rgbID, path: rb.rgb, zoom: rb.rgbZoom, tiles: rb.rgbTiles, dz: 2, requests: 2000},
		{name: "dem/z15", id: rb.demID, path: rb.dem, zoom: rb.demZoom, tiles: rb.demTiles, query: "?colormap_name=viridis",
			gdal: []string{"-ot", "Byte", "-scale", "0", "900", "0", "255"}, requests: 2000},
		{name: "rgb/z16-cached", id: rb.rgbID, path: rb.rgb, zoom: rb.rgbZoom, tiles: rb.rgbTiles, cached: true, requests: 20000},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			tileBenchCache(b, hc, token, c.cached, 128<<20)
			requests := c.requests
			if n, err := strconv.Atoi(os.Getenv("BENCH_RASTER_REQUESTS")); err == nil && n > 0 {
				requests = n
			}
			z := c.zoom - c.dz
			x0, y0, x1, y1 := c.tiles[0]>>c.dz, c.tiles[1]>>c.dz, c.tiles[2]>>c.dz, c.tiles[3]>>c.dz
			rnd := rand.New(rand.NewPCG(uint64(len(c.name)), 11))
			draw := func(n int) [][2]int {
				out := make([][2]int, n)
				for i := range out {
					out[i] = [2]int{x0 + rnd.IntN(x1-x0+1), y0 + rnd.IntN(y1-y0+1)}
				}
				if c.cached {
					for i := range out {
						out[i] = out[i%64]
					}
				}
				return out
			}
			ours := func(t [2]int) error {
				u := fmt.Sprintf("%s/tiles/raster-proxy/%s/%d/%d/%d.png%s", server.APIRoot, c.id, z, t[0], t[1], c.query)
				res, err := hc.Get(u)
				if err != nil {
					return err
				}
				defer res.Body.Close()
				if _, err := io.Copy(io.Discard, res.Body); err != nil {
					return err
				}
				if res.StatusCode != 200 && res.StatusCode != 204 { // 204: the DEM's nodata hole
					return fmt.Errorf("%s: %d", u, res.StatusCode)
				}
				return nil
			}
			tmp := b.TempDir()
			gdal := func(i int, t [2]int) error {
				bb := cog.TileBounds(z, t[0], t[1])
				f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
				out := filepath.Join(tmp, strconv.Itoa(i)+".png")
				args := append([]string{"-q", "-of", "PNG", "-outsize", "256", "256", "-projwin", f(bb[0]), f(bb[3]), f(bb[2]), f(bb[1])}, c.gdal...)
				if msg, err := exec.Command("gdal_translate", append(args, c.path, out)...).CombinedOutput(); err != nil {
					return fmt.Errorf("gdal_translate: %v: %s", err, msg)
				}
				os.Remove(out)
				os.Remove(out + ".aux.xml")
				return nil
			}
			// Warm both: the page cache, the server's open COG, GDAL's binary.
			warm := draw(64)
			if _, _, err := rasterLoad(conc, len(warm), func(i int) error { return ours(warm[i]) }); err != nil {
				b.Fatal(err)
			}
			if _, _, err := rasterLoad(conc, 16, func(i int) error { return gdal(i, warm[i]) }); err != nil {
				b.Fatal(err)
			}
			var lat []time.Duration
			var rate, gdalRate, cpuPerTile float64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				tiles := draw(requests)
				cpu0 := procCPU(server.cmd.Process.Pid)
				l, r, err := rasterLoad(conc, len(tiles), func(i int) error { return ours(tiles[i]) })
				if err != nil {
					b.Fatal(err)
				}
				lat, rate = append(lat, l...), r
				cpuPerTile = float64((procCPU(server.cmd.Process.Pid) - cpu0).Microseconds()) / 1000 / float64(len(tiles))
				if c.cached {
					continue
				}
				gt := draw(max(32, requests/10))
				if _, gdalRate, err = rasterLoad(conc, len(gt), func(i int) error { return gdal(i, gt[i]) }); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(rate, "server-tiles/s")
			b.ReportMetric(percentileMS(lat, 0.50), "server-p50-ms")
			b.ReportMetric(percentileMS(lat, 0.95), "server-p95-ms")
			// The server's CPU per tile does not depend on what else the machine runs.
			b.ReportMetric(cpuPerTile, "server-cpu-ms/tile")
			if !c.cached {
				b.ReportMetric(gdalRate, "gdal-tiles/s")
				b.ReportMetric(rate/gdalRate, "ratio")
			}
		})
	}
	tileBenchCache(b, hc, token, true, 128<<20)
}
