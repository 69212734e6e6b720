// Package gdalcmd runs GDAL's command-line tools (ogrinfo, ogr2ogr, gdal_translate) confined for
// files users sent: only the drivers the caller names are registered, GDAL cannot reach the
// network, the process sees none of the server's environment (no DATABASE_URL, no JWT secret),
// and it is killed with its whole process group when its context ends.
package gdalcmd

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Drivers that GDAL_SKIP cannot name, because it splits its value at spaces. None of them
// reaches the network or a database; callers that care check the driver ogrinfo reports.
var unskippable = map[string]bool{"ESRI Shapefile": true, "Interlis 1": true, "Interlis 2": true, "MapInfo File": true, "UK .NTF": true}

var (
	driversOnce sync.Once
	drivers     []string
	driversErr  error
)

// installed lists every driver of the installed GDAL, raster and vector, once per process.
func installed() ([]string, error) {
	driversOnce.Do(func() {
		for _, tool := range []string{"ogrinfo", "gdalinfo"} {
			out, err := exec.Command(tool, "--formats").Output()
			if err != nil {
				driversErr = fmt.Errorf("%s --formats: %w (is gdal-bin installed?)", tool, err)
				return
			}
			sc := bufio.NewScanner(bytes.NewReader(out))
			for sc.Scan() {
				line := sc.Text()
				if !strings.HasPrefix(line, "  ") {
					continue
				}
				// "  GPKG -raster,vector- (rw+vs): GeoPackage"
				name, _, ok := strings.Cut(strings.TrimSpace(line), " -")
				if ok && !slices.Contains(drivers, name) {
					drivers = append(drivers, name)
				}
			}
		}
		if len(drivers) == 0 {
			driversErr = fmt.Errorf("GDAL reports no drivers")
		}
	})
	return drivers, driversErr
}

// skipList is the GDAL_SKIP value that leaves only allow (and the unskippable drivers) registered.
func skipList(allow []string) (string, error) {
	all, err := installed()
	if err != nil {
		return "", err
	}
	var skip []string
	for _, d := range all {
		if !unskippable[d] && !slices.Contains(allow, d) {
			skip = append(skip, d)
		}
	}
	return strings.Join(skip, ","), nil
}

// offline are GDAL and PROJ settings under which no path, URL or file reference GDAL meets can
// make it fetch anything: every HTTP request goes to a proxy on the discard port, /vsicurl/ only
// believes in files with an extension nothing has, PROJ's grid CDN is off and GML schemas are
// never resolved. Belt and braces behind the driver list: VRT and the network drivers are not
// registered at all.
var offline = []string{
	"GDAL_HTTP_PROXY=127.0.0.1:9", "GDAL_HTTPS_PROXY=127.0.0.1:9",
	"http_proxy=http://127.0.0.1:9", "https_proxy=http://127.0.0.1:9", "all_proxy=http://127.0.0.1:9", "no_proxy=",
	"GDAL_HTTP_TIMEOUT=1", "GDAL_HTTP_CONNECTTIMEOUT=1", "GDAL_HTTP_MAX_RETRY=0",
	"CPL_VSIL_CURL_ALLOWED_EXTENSIONS=.meridian-offline", "GDAL_DISABLE_READDIR_ON_OPEN=NO",
	"PROJ_NETWORK=OFF", "OGR_SQLITE_ALLOW_EXTERNAL_ACCESS=NO",
	"GML_SKIP_RESOLVE_ELEMS=ALL", "GML_DOWNLOAD_WFS_SCHEMA=NO", "GML_SKIP_CORRUPTED_FEATURES=NO",
}

// Env is the whole environment of a GDAL process: a fixed PATH and locale, a HOME without a
// gdalrc, the offline settings, the driver list, and extra (for instance PGPASSWORD of the
// import role). Nothing is inherited from the server.
func Env(allow []string, extra ...string) ([]string, error) {
	skip, err := skipList(allow)
	if err != nil {
		return nil, err
	}
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "HOME=/nonexistent", "GDAL_SKIP=" + skip}
	env = append(env, offline...)
	return append(env, extra...), nil
}

// Command prepares tool with args under Env(allow, extra...) and the kernel limits lim. When ctx
// ends (its deadline is the caller's time limit) the tool and every process it started are killed.
func Command(ctx context.Context, lim Limits, allow []string, extra []string, tool string, args ...string) (*exec.Cmd, error) {
	if lim.CacheMB > 0 {
		extra = append(slices.Clip(extra), "GDAL_CACHEMAX="+strconv.Itoa(lim.CacheMB))
	}
	env, err := Env(allow, extra...)
	if err != nil {
		return nil, err
	}
	name, args := lim.wrap(tool, args)
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	cmd.Dir = "/"
	// Its own process group, so a timeout kills what it started too; and it dies with the server
	// (SIGKILL on the parent's death), so a crashed server leaves no import writing on.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// Pipes held open by a killed child must not keep Wait waiting.
	cmd.WaitDelay = 2 * time.Second
	return cmd, nil
}
