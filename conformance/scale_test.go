//go:build scale

// The scale tests (issue #34) run two replicas of the server behind HAProxy over one database,
// one DATA_DIR and, when MINIO_BIN names the MinIO `make test-s3` builds (make test-scale builds
// it once and passes it), one MinIO that presigned uploads go to: cross-replica correctness,
// jobs crossing replicas, a rolling restart under load and an endurance run. `make test-scale`
// runs them (never `make test`); they need haproxy on PATH, which the target installs. The
// shared DATA_DIR stays: staging lives there (raster COGs go to MinIO with the uploads).
package conformance

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// scaleCluster is two replicas sharing the suite's database, secret and DATA_DIR, and the proxy
// in front of them.
type scaleCluster struct {
	replicas [2]*Server
	proxy    string // API root through HAProxy
	haproxy  *exec.Cmd
	hlog     *syncBuffer
	pprof    [2]string // each replica's PPROF_ADDR: the goroutine count, on loopback only
	minio    *exec.Cmd // the object storage both replicas share (nil: MINIO_BIN unset)
	s3       string    // its address
	scratch  []string  // HAProxy's and MinIO's temporary directories, removed by stop
}

// drainDelay is the replicas' SHUTDOWN_DRAIN_DELAY: well above HAProxy's inter × fall (2 × 200ms).
const drainDelay = 1500 * time.Millisecond

// twoReplicas starts the cluster for one test; it stops when the test ends.
func twoReplicas(t *testing.T) *scaleCluster {
	t.Helper()
	c, err := startCluster(serverSecret(t, server))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.stop)
	return c
}

func startCluster(secret string) (*scaleCluster, error) {
	c := &scaleCluster{hlog: &syncBuffer{}}
	env := []string{"JWT_SECRET_KEY=" + secret, "DATA_DIR=" + server.dataDir,
		"RATE_LIMIT_ENABLED=false", "CLIENT_MAX_IN_FLIGHT=0", "TRUST_FORWARDED_HEADERS=true",
		"SHUTDOWN_DRAIN_DELAY=" + drainDelay.String(), "SHUTDOWN_TIMEOUT=20s", "IMPORT_STALL_TIMEOUT=" + stallTimeout.String()}
	// SCALE_REPLICA_ENV adds settings to both replicas (KEY=VALUE, space-separated), to try the
	// rules with a mechanism turned off (IMPORT_STALL_RESCUES=0 fails jobs/replica-killed-mid-import).
	if bin := os.Getenv("MINIO_BIN"); bin != "" {
		if err := c.startMinIO(bin); err != nil {
			c.stop()
			return nil, err
		}
		env = append(env, "S3_ENDPOINT="+c.s3, "S3_USE_SSL=false", "S3_BUCKET=uploads", "S3_ACCESS_KEY=meridian", "S3_SECRET_KEY=meridian-test-secret")
	}
	env = append(env, strings.Fields(os.Getenv("SCALE_REPLICA_ENV"))...)
	for i := range c.replicas {
		port, err := freePort()
		if err != nil {
			c.stop()
			return nil, err
		}
		c.pprof[i] = fmt.Sprintf("127.0.0.1:%d", port)
		s, err := Start(context.Background(), server.DBURL, append(env, "PPROF_ADDR="+c.pprof[i])...)
		if err != nil {
			c.stop()
			return nil, err
		}
		c.replicas[i] = s
	}
	if err := c.startProxy(); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

// startProxy runs HAProxy in the foreground with its own configuration in a temporary
// directory: round robin without stickiness, readiness checked every 200ms. Each answer names
// the replica that gave it (X-Replica: r0, r1) for the per-replica figures. It retries nothing:
// the replicas' drain alone must keep a rolling restart free of errors (with drainDelay 0, 185
// of 8678 requests failed). A deployment may add "retry-on conn-failure" as a second guard.
func (c *scaleCluster) startProxy() error {
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		bin = "/usr/sbin/haproxy" // not on an unprivileged user's PATH
		if _, err := os.Stat(bin); err != nil {
			return fmt.Errorf("haproxy is not installed (make test-scale installs it): %w", err)
		}
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "meridian-haproxy-")
	if err != nil {
		return err
	}
	c.scratch = append(c.scratch, dir)
	var servers strings.Builder
	for i, s := range c.replicas {
		fmt.Fprintf(&servers, "  server r%d %s check\n", i, hostOf(s.APIRoot))
	}
	user := ""
	if os.Geteuid() == 0 {
		user = "  user nobody\n  group nogroup\n" // HAProxy drops to these after binding
	}
	cfg := "global\n" + user + "  maxconn 4096\n" +
		`defaults
  mode http
  timeout connect 2s
  timeout client 120s
  timeout server 120s
  timeout http-keep-alive 10s
  option forwardfor
  retry-on none
frontend api
  bind 127.0.0.1:` + strconv.Itoa(port) + `
  default_backend replicas
backend replicas
  balance roundrobin
  option httpchk GET /readyz
  http-response set-header X-Replica %[srv_name]
  http-check expect status 200
  default-server inter 200ms fall 2 rise 2
` + servers.String()
	path := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		return err
	}
	c.haproxy = exec.Command(bin, "-db", "-f", path)
	c.haproxy.Stdout, c.haproxy.Stderr = c.hlog, c.hlog
	if err := c.haproxy.Start(); err != nil {
		return err
	}
	c.proxy = fmt.Sprintf("http://127.0.0.1:%d/api", port)
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if res, err := http.Get(c.proxy + "/health"); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("haproxy did not answer in time:\n%s", c.hlog.String())
}

func (c *scaleCluster) stop() {
	if c.haproxy != nil && c.haproxy.Process != nil {
		_ = c.haproxy.Process.Kill()
		_ = c.haproxy.Wait()
	}
	defer func() {
		if c.minio != nil && c.minio.Process != nil {
			_ = c.minio.Process.Kill()
			_ = c.minio.Wait()
		}
		for _, dir := range c.scratch {
			_ = os.RemoveAll(dir)
		}
	}()
	for _, s := range c.replicas {
		if s != nil {
			s.dataDir = "" // the shared DATA_DIR belongs to the suite's server
			s.Stop()
		}
	}
}

func hostOf(root string) string {
	return strings.TrimSuffix(strings.TrimPrefix(root, "http://"), "/api")
}

// rollingRestart stops replica i with SIGTERM, waits for it to exit and starts it again, then
// waits until HAProxy has seen it ready (rise 2 × 200ms).
func (c *scaleCluster) rollingRestart(t *testing.T, i int) {
	t.Helper()
	s := c.replicas[i]
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.exited:
	case <-time.After(60 * time.Second):
		t.Fatalf("replica %d did not exit within 60s of SIGTERM:\n%s", i, tail(s.Logs(), 2000))
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	for readyAt(s.APIRoot) != 200 {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second)
}

// rss is the resident set of replica i in MiB.
func (c *scaleCluster) rss(i int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.replicas[i].cmd.Process.Pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kb / 1024
		}
	}
	return -1
}

// fds is how many files (sockets included) replica i holds open.
func (c *scaleCluster) fds(i int) int {
	e, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", c.replicas[i].cmd.Process.Pid))
	if err != nil {
		return -1
	}
	return len(e)
}

// dbConns is how many TCP connections to the database replica i holds open (its pools; the
// ogr2ogr and export processes it starts are processes of their own): the sockets among its
// files whose peer is the database's port.
func (c *scaleCluster) dbConns(i int) int {
	u, err := url.Parse(server.DBURL)
	if err != nil {
		return -1
	}
	port, _ := strconv.ParseUint(u.Port(), 10, 16)
	pid := c.replicas[i].cmd.Process.Pid
	inodes := map[string]bool{}
	for _, f := range []string{"tcp", "tcp6"} {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, f))
		for _, line := range strings.Split(string(b), "\n")[1:] {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fs := strings.Fields(line)
			if len(fs) < 10 || fs[3] != "01" { // ESTABLISHED
				continue
			}
			if _, p, ok := strings.Cut(fs[2], ":"); ok {
				if n, _ := strconv.ParseUint(p, 16, 16); n == port {
					inodes["socket:["+fs[9]+"]"] = true
				}
			}
		}
	}
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	e, _ := os.ReadDir(dir)
	n := 0
	for _, f := range e {
		if l, err := os.Readlink(filepath.Join(dir, f.Name())); err == nil && inodes[l] {
			n++
		}
	}
	return n
}

// goroutines is replica i's goroutine count, from the first line of its goroutine profile on
// its loopback PPROF_ADDR ("goroutine profile: total N"). The API itself exposes no count.
func (c *scaleCluster) goroutines(i int) int {
	res, err := http.Get("http://" + c.pprof[i] + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		return -1
	}
	defer res.Body.Close()
	line, _ := bufio.NewReader(res.Body).ReadString('\n')
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "goroutine profile: total ")))
	if err != nil {
		return -1
	}
	return n
}

// startMinIO runs the MinIO `make test-s3` builds (MINIO_BIN) with its data in a temporary
// directory and makes the bucket the replicas' presigned uploads go to.
func (c *scaleCluster) startMinIO(bin string) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "meridian-minio-")
	if err != nil {
		return err
	}
	c.scratch = append(c.scratch, dir)
	c.s3 = fmt.Sprintf("127.0.0.1:%d", port)
	c.minio = exec.Command(bin, "server", dir, "--address", c.s3, "--quiet")
	c.minio.Env = append(os.Environ(), "MINIO_ROOT_USER=meridian", "MINIO_ROOT_PASSWORD=meridian-test-secret")
	if err := c.minio.Start(); err != nil {
		return err
	}
	mc, err := minio.New(c.s3, &minio.Options{Creds: credentials.NewStaticV4("meridian", "meridian-test-secret", "")})
	if err != nil {
		return err
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if err = mc.MakeBucket(context.Background(), "uploads", minio.MakeBucketOptions{}); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("MinIO did not come up: %w", err)
	}
	return nil
}
