package backup

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// debianPGBin is where Debian's postgresql-15 package puts pg_dump and pg_restore (the cluster
// of scripts/devdb.sh runs from there too); PGBIN overrides it, and PATH is the last resort.
const debianPGBin = "/usr/lib/postgresql/15/bin"

// pgTool finds one of PostgreSQL's client programs.
func pgTool(name string) (string, error) {
	for _, dir := range []string{os.Getenv("PGBIN"), debianPGBin} {
		if dir == "" {
			continue
		}
		if p := filepath.Join(dir, name); isExecutable(p) {
			return p, nil
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s not found in PGBIN, %s or PATH (Debian: apt-get install postgresql-client-15)", name, debianPGBin)
	}
	return p, nil
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// libpqConn turns DATABASE_URL into what pg_dump and pg_restore accept: pgx's own parameters
// (pool_*) are dropped, since libpq refuses unknown ones, and the password moves to PGPASSWORD so
// it never shows on a command line.
func libpqConn(dbURL string) (conn string, env []string, err error) {
	u, err := url.Parse(dbURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", nil, fmt.Errorf("DATABASE_URL is not a postgres:// URL")
	}
	q := u.Query()
	for k := range q {
		if strings.HasPrefix(k, "pool_") {
			q.Del(k)
		}
	}
	u.RawQuery = q.Encode()
	env = os.Environ()
	if pw, ok := u.User.Password(); ok {
		env = append(env, "PGPASSWORD="+pw)
		u.User = url.User(u.User.Username())
	}
	return u.String(), env, nil
}

// run runs a PostgreSQL client program and reports its standard error when it fails.
func run(ctx context.Context, env []string, stdout *bytes.Buffer, name string, args ...string) error {
	bin, err := pgTool(name)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if stdout != nil {
		cmd.Stdout = stdout
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %v: %s", name, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}
