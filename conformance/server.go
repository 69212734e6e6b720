package conformance

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is a real bin/meridian process started for tests.
type Server struct {
	APIRoot string // http://127.0.0.1:PORT/api
	DBURL   string
	bin     string
	env     []string
	dataDir string
	cmd     *exec.Cmd
	exited  chan error
	logs    *syncBuffer
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// Binary builds cmd/meridian once per test process and returns its path.
func Binary() (string, error) {
	buildOnce.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			buildErr = err
			return
		}
		dir, err := os.MkdirTemp("", "meridian-bin-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "meridian")
		cmd := exec.Command("go", "build", "-o", builtBin, "./cmd/meridian")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	return builtBin, buildErr
}

// RemoveBinary deletes what Binary built; the test process calls it once on its way out,
// since every `go test` run builds its own and /tmp would otherwise keep one per run.
func RemoveBinary() {
	if builtBin != "" {
		_ = os.RemoveAll(filepath.Dir(builtBin))
	}
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	return filepath.Dir(strings.TrimSpace(string(out))), nil
}

// CreateDatabase makes a fresh, empty database on the cluster of adminURL and returns its URL.
func CreateDatabase(ctx context.Context, adminURL string) (string, error) {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	name := "conf_" + randomHex(6)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", err
	}
	u, err := url.Parse(adminURL)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}

// DropDatabase removes a database made by CreateDatabase.
func DropDatabase(ctx context.Context, adminURL, dbURL string) error {
	u, err := url.Parse(dbURL)
	if err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{strings.TrimPrefix(u.Path, "/")}.Sanitize()+" WITH (FORCE)")
	return err
}

// Start runs the binary against dbURL with env (KEY=VALUE) added to a sane test environment, and
// waits until it accepts requests.
func Start(ctx context.Context, dbURL string, env ...string) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	dataDir, err := os.MkdirTemp("", "meridian-data-")
	if err != nil {
		return nil, err
	}
	s := &Server{APIRoot: "http://" + addr + "/api", DBURL: dbURL, logs: &syncBuffer{}, bin: bin, dataDir: dataDir}
	s.env = append(os.Environ(),
		"DATABASE_URL="+dbURL,
		"JWT_SECRET_KEY="+randomHex(24),
		"LISTEN_ADDR="+addr,
		"BASE_URL=http://"+addr,
		"DATA_DIR="+dataDir,
		"ADMIN_USERNAME=admin",
		"ADMIN_PASSWORD="+AdminPassword,
		"ADMIN_EMAIL=admin@example.org",
		"LOG_FORMAT=json",
		"LOG_LEVEL=warn",
	)
	s.env = append(s.env, env...)
	if err := s.launch(); err != nil {
		return nil, err
	}
	return s, nil
}

// launch runs the binary with the server's environment and waits until it is healthy.
func (s *Server) launch() error {
	s.cmd = exec.Command(s.bin, "serve")
	s.cmd.Env = s.env
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	if err := s.cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	s.exited = exited
	go func() { exited <- s.cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-s.exited:
			return fmt.Errorf("meridian exited during start-up (%v):\n%s", err, s.logs.String())
		default:
		}
		res, err := http.Get(s.APIRoot + "/health")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = s.cmd.Process.Kill()
	return fmt.Errorf("meridian did not become healthy in time:\n%s", s.logs.String())
}

// Kill ends the server at once with SIGKILL, as a crash or the OOM killer would.
func (s *Server) Kill() {
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// Restart starts the server again on the same address, database, data directory and secrets.
func (s *Server) Restart() error { return s.launch() }

// AdminPassword is the first admin's password on servers started by Start.
const AdminPassword = "Conformance-Admin-2026!"

// Stop ends the server gracefully (SIGTERM), waits for it and removes its data directory.
func (s *Server) Stop() {
	if s == nil || s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.exited:
	case <-time.After(20 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	_ = os.RemoveAll(s.dataDir)
}

// Logs returns what the server printed so far.
func (s *Server) Logs() string { return s.logs.String() }

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
