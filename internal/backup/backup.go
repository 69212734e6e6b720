package backup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"meridian/internal/config"
	"meridian/migrations"
	"meridian/store"
)

// A backup directory holds manifestFile, the database as pg_dump's directory format under
// dumpDir, and the files of DATA_DIR under filesDir.
const (
	manifestFile  = "manifest.json"
	dumpDir       = "db"
	filesDir      = "files"
	formatVersion = 1
)

// Manifest describes one backup: what a restore checks before it starts.
type Manifest struct {
	Format        int       `json:"format"`
	Version       string    `json:"meridian_version"`
	SchemaVersion int       `json:"schema_version"`
	Database      string    `json:"database"`
	TakenAt       time.Time `json:"taken_at"` // the database snapshot
	FinishedAt    time.Time `json:"finished_at"`
	// Roles are the roles the dump grants to or names in row-security policies (the server's,
	// the import role, the read-only SQL role); a restore creates those missing, without login.
	Roles []string `json:"roles"`
	// ObjectStorage is where raster COGs were kept: "local" (they are in files/) or "s3" (they
	// stay in the bucket, which the operator mirrors).
	ObjectStorage string `json:"object_storage"`
	Files         int64  `json:"files"`
	FileBytes     int64  `json:"file_bytes"`
}

// Options name the deployment and the backup directory.
type Options struct {
	DatabaseURL   string
	DataDir       string
	Dir           string // the backup directory (written by Backup, read by Restore)
	ObjectStorage string // "local" or "s3"
	Log           *slog.Logger
}

// Backup writes a consistent backup of the database and DATA_DIR to o.Dir, which must be new or
// empty, and records it in the database. The dump reads one snapshot, exported by a transaction
// that stays open while pg_dump runs; the files are copied after it, so every file the snapshot
// names was either copied or deleted while the backup ran, which the backup checks for the
// stored COGs (it fails, to be run again, when one is missing). Writes go on meanwhile.
func Backup(ctx context.Context, o Options) (Manifest, error) {
	m := Manifest{Format: formatVersion, Version: config.Version, ObjectStorage: o.ObjectStorage}
	if empty, err := emptyDir(o.Dir); err != nil || !empty {
		return m, fmt.Errorf("the backup directory %s must be new or empty (%v)", o.Dir, err)
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return m, err
	}
	conn, err := connect(ctx, o.DatabaseURL)
	if err != nil {
		return m, err
	}
	defer func() { _ = conn.Close(ctx) }()
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return m, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var snapshot string
	var dirty bool
	if err := tx.QueryRow(ctx, `SELECT pg_export_snapshot(), statement_timestamp(), current_database()`).Scan(&snapshot, &m.TakenAt, &m.Database); err != nil {
		return m, err
	}
	m.TakenAt = m.TakenAt.UTC()
	if err := tx.QueryRow(ctx, `SELECT version, dirty FROM schema_migrations`).Scan(&m.SchemaVersion, &dirty); err != nil {
		return m, fmt.Errorf("reading the schema version (has the server migrated this database?): %w", err)
	}
	if dirty {
		return m, fmt.Errorf("migration %d did not finish; fix the database before backing it up", m.SchemaVersion)
	}
	if m.Roles, err = grantees(ctx, tx); err != nil {
		return m, err
	}
	var keys []string
	if o.ObjectStorage == "local" {
		if keys, err = storedKeys(ctx, tx); err != nil {
			return m, err
		}
	}
	conn2, env, err := libpqConn(o.DatabaseURL)
	if err != nil {
		return m, err
	}
	if err := run(ctx, env, nil, "pg_dump", "--format=directory", "--snapshot="+snapshot, "--no-password",
		"--file="+filepath.Join(o.Dir, dumpDir), "--dbname="+conn2); err != nil {
		return m, err
	}
	if err := tx.Rollback(ctx); err != nil {
		return m, err
	}
	if m.Files, m.FileBytes, err = copyTree(o.DataDir, filepath.Join(o.Dir, filesDir), scratch); err != nil {
		return m, fmt.Errorf("copying DATA_DIR: %w", err)
	}
	for _, k := range keys {
		if _, err := os.Stat(filepath.Join(o.Dir, filesDir, filepath.FromSlash(k))); err != nil {
			return m, fmt.Errorf("the stored file %s, which the database names, was not copied (deleted while the backup ran?); back up again: %w", k, err)
		}
	}
	m.FinishedAt = time.Now().UTC()
	if err := writeManifest(o.Dir, m); err != nil {
		return m, err
	}
	// Recorded last, once the backup is whole: the health report's age counts only backups that
	// can be restored. The record is not in this backup's own dump (it comes after the snapshot);
	// a restore writes it from the manifest.
	err = store.New(conn).RecordBackupRun(ctx, store.RecordBackupRunParams{Kind: "backup", TakenAt: m.TakenAt, Label: filepath.Base(o.Dir)})
	if err != nil {
		return m, fmt.Errorf("the backup is complete but recording it failed: %w", err)
	}
	return m, nil
}

// connect opens one connection with DATABASE_URL, whose pool_ parameters (pgxpool's) it ignores.
func connect(ctx context.Context, dbURL string) (*pgx.Conn, error) {
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	return pgx.ConnectConfig(ctx, cfg.ConnConfig)
}

// grantees lists the roles (besides PUBLIC and the built-in pg_ ones) that privileges of the
// database's objects or its row-security policies name: pg_restore replays those grants, so
// they must exist where the backup is restored.
func grantees(ctx context.Context, tx pgx.Tx) ([]string, error) {
	rows, err := tx.Query(ctx, `WITH g AS (
			SELECT (aclexplode(relacl)).grantee AS r FROM pg_class WHERE relacl IS NOT NULL
			UNION SELECT (aclexplode(attacl)).grantee FROM pg_attribute WHERE attacl IS NOT NULL
			UNION SELECT (aclexplode(proacl)).grantee FROM pg_proc WHERE proacl IS NOT NULL
			UNION SELECT (aclexplode(nspacl)).grantee FROM pg_namespace WHERE nspacl IS NOT NULL
			UNION SELECT (aclexplode(typacl)).grantee FROM pg_type WHERE typacl IS NOT NULL
			UNION SELECT (aclexplode(defaclacl)).grantee FROM pg_default_acl
			UNION SELECT defaclrole FROM pg_default_acl
			UNION SELECT unnest(polroles) FROM pg_policy)
		SELECT rolname FROM pg_roles JOIN g ON g.r = pg_roles.oid WHERE rolname NOT LIKE 'pg\_%' ORDER BY rolname`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// storedKeys are the object-store keys of the COGs the catalog serves.
func storedKeys(ctx context.Context, tx pgx.Tx) ([]string, error) {
	rows, err := tx.Query(ctx, `SELECT raster->>'storage_key' FROM catalog.datasets WHERE coalesce(raster->>'storage_key', '') <> ''`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

func writeManifest(dir string, m Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, manifestFile), append(b, '\n'), 0o600)
}

func readManifest(dir string) (Manifest, error) {
	var m Manifest
	b, err := os.ReadFile(filepath.Join(dir, manifestFile))
	if err != nil {
		return m, fmt.Errorf("not a Meridian backup (no %s): %w", manifestFile, err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("%s: %w", manifestFile, err)
	}
	if m.Format != formatVersion {
		return m, fmt.Errorf("backup format %d; this server reads format %d", m.Format, formatVersion)
	}
	return m, nil
}

// latestMigration is the newest schema version this binary migrates to.
func latestMigration() (int, error) {
	names, err := fs.Glob(migrations.FS, "*.up.sql")
	if err != nil {
		return 0, err
	}
	latest := 0
	for _, n := range names {
		if v, err := strconv.Atoi(strings.SplitN(n, "_", 2)[0]); err == nil {
			latest = max(latest, v)
		}
	}
	return latest, nil
}

// Restore restores the backup in o.Dir into the empty database of o.DatabaseURL and the empty
// (or missing) o.DataDir, connected as the role the server will serve as, which then owns what
// it restores, as it owns what its migrations create. The database comes back as the snapshot
// was, at its schema version (the server migrates further at start when it is newer); roles the
// dump names are created, without login, when missing (the server gives the import and SQL roles
// their login at start). The restored database records the backup it came from, so its health
// report tells the age of that backup.
func Restore(ctx context.Context, o Options) (Manifest, error) {
	m, err := readManifest(o.Dir)
	if err != nil {
		return m, err
	}
	if latest, err := latestMigration(); err != nil || m.SchemaVersion > latest {
		return m, fmt.Errorf("the backup is at schema version %d, newer than this server's %d: restore it with the release that took it (%s)", m.SchemaVersion, latest, m.Version)
	}
	if empty, err := emptyDir(o.DataDir); err != nil || !empty {
		return m, fmt.Errorf("DATA_DIR %s must be new or empty (%v)", o.DataDir, err)
	}
	conn, err := connect(ctx, o.DatabaseURL)
	if err != nil {
		return m, err
	}
	defer func() { _ = conn.Close(ctx) }()
	var used, super bool
	if err := conn.QueryRow(ctx, `SELECT to_regnamespace('catalog') IS NOT NULL OR to_regclass('public.schema_migrations') IS NOT NULL,
			(SELECT rolsuper FROM pg_roles WHERE rolname = current_user)`).Scan(&used, &super); err != nil {
		return m, err
	}
	if used {
		return m, errors.New("the database is not empty (it has Meridian's schema): restore into a new database")
	}
	if err := createRoles(ctx, conn, m.Roles, o.Log); err != nil {
		return m, err
	}
	if err := pgRestore(ctx, o, super); err != nil {
		return m, err
	}
	err = store.New(conn).RecordBackupRun(ctx, store.RecordBackupRunParams{Kind: "restore", TakenAt: m.TakenAt, Label: filepath.Base(o.Dir)})
	if err != nil {
		return m, err
	}
	if _, _, err := copyTree(filepath.Join(o.Dir, filesDir), o.DataDir, nil); err != nil {
		return m, fmt.Errorf("copying the files to DATA_DIR: %w", err)
	}
	return m, nil
}

// createRoles creates the roles the dump names that this cluster lacks, without login.
func createRoles(ctx context.Context, conn *pgx.Conn, roles []string, log *slog.Logger) error {
	for _, r := range roles {
		var exists bool
		if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)`, r).Scan(&exists); err != nil {
			return err
		}
		if exists {
			continue
		}
		if _, err := conn.Exec(ctx, "CREATE ROLE "+pgx.Identifier{r}.Sanitize()+" NOLOGIN"); err != nil {
			return fmt.Errorf("creating the role %s the backup grants to (needs CREATEROLE): %w", r, err)
		}
		log.Info("created a role the backup grants to, without login", "role", r)
	}
	return nil
}

// pgRestore restores the dump in one transaction, stopping at the first error, so a failed
// restore leaves the database empty. As another role than a superuser it leaves out what only
// a superuser may do, as the migrations do then (migrations 33 and 53: taking built-in
// functions from PUBLIC), and what only the extensions' owner may write: their comments and the
// spatial reference systems added to PostGIS's table (Meridian adds none).
func pgRestore(ctx context.Context, o Options, super bool) error {
	conn, env, err := libpqConn(o.DatabaseURL)
	if err != nil {
		return err
	}
	dump := filepath.Join(o.Dir, dumpDir)
	var toc bytes.Buffer
	if err := run(ctx, env, &toc, "pg_restore", "--list", dump); err != nil {
		return err
	}
	var kept []string
	for _, line := range strings.Split(toc.String(), "\n") {
		if !super && (strings.Contains(line, " ACL pg_catalog ") || strings.Contains(line, " COMMENT - EXTENSION ") ||
			strings.Contains(line, " TABLE DATA public spatial_ref_sys ")) {
			o.Log.Warn("restoring as a role that is not a superuser: left out", "entry", line)
			continue
		}
		kept = append(kept, line)
	}
	list, err := os.CreateTemp("", "meridian-restore-*.list")
	if err != nil {
		return err
	}
	defer os.Remove(list.Name())
	if _, err := list.WriteString(strings.Join(kept, "\n")); err != nil {
		return err
	}
	if err := list.Close(); err != nil {
		return err
	}
	return run(ctx, env, nil, "pg_restore", "--no-owner", "--single-transaction", "--exit-on-error", "--no-password",
		"--use-list="+list.Name(), "--dbname="+conn, dump)
}
