// Command meridian is the Meridian spatial data catalog server.
//
//	meridian [serve]   migrate the database, create the first admin if needed, serve the API
//	meridian migrate   apply pending migrations and exit
//	meridian backup --out DIR    back up the database and DATA_DIR to DIR, and record it
//	meridian restore --from DIR  restore a backup into an empty database and DATA_DIR
//	meridian version   print the version
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"meridian/handlers"
	"meridian/internal/accounts"
	"meridian/internal/ai"
	"meridian/internal/apidocs"
	"meridian/internal/config"
	"meridian/internal/db"
	"meridian/internal/gdalcmd"
	"meridian/internal/ingest"
	"meridian/internal/manifest"
	"meridian/internal/maps"
	"meridian/internal/rangeproxy"
	"meridian/internal/sources"
	"meridian/internal/sqlquery"
	"meridian/internal/stacimport"
	"meridian/internal/web"
	"meridian/openapi"
	"meridian/store"
)

// defaultGCPercent is the collector's GOGC unless the environment sets one. A request allocates
// far more than the service keeps, and with the runtime's 100 over a live heap of a few tens of
// MB the collector ran every few hundred requests and took a quarter of a STAC search's CPU; at
// 300 the heap may grow to four times what is live between collections (README, "Memory").
const defaultGCPercent = 300

func main() {
	cmd := "serve"
	if len(os.Args) > 1 {
		cmd = os.Args[1]
	}
	var err error
	switch cmd {
	case "serve":
		err = serve()
	case "migrate":
		err = migrate()
	case "backup", "restore":
		err = backupCommand(cmd, os.Args[2:])
	case "version", "--version", "-v":
		fmt.Printf("meridian %s (build %s)\n", config.Version, config.Build)
	default:
		err = fmt.Errorf("unknown command %q (want serve, migrate, backup, restore or version)", cmd)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "meridian:", err)
		os.Exit(1)
	}
}

func newLogger(cfg config.Config) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, opts))
}

func migrate() error {
	cfg, err := config.Load()
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	ctx := context.Background()
	// Migrations may rewrite large tables: no statement_timeout.
	pool, err := db.Open(ctx, cfg.DatabaseURL, 2, 0)
	if err != nil {
		return err
	}
	defer pool.Close()
	return db.Migrate(pool)
}

func serve() error {
	cfg, err := config.Load()
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	log := newLogger(cfg)
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	doc, err := openapi.Load()
	if err != nil {
		return fmt.Errorf("embedded OpenAPI document: %w", err)
	}
	if err := doc.Validate(ctx); err != nil {
		return fmt.Errorf("embedded OpenAPI document is invalid: %w", err)
	}
	// Requests are matched by our router, not by server URLs.
	doc.Servers = nil

	// Two pools. Requests use pool, whose every statement PostgreSQL cancels after QUERY_TIMEOUT;
	// work that legitimately runs longer (migrations, River, the import jobs) uses jobs, which has
	// no statement_timeout and bounds itself (job contexts, River's job timeouts).
	pool, err := db.Open(ctx, cfg.DatabaseURL, cfg.DBMaxConns, cfg.QueryTimeout)
	if err != nil {
		return err
	}
	defer pool.Close()
	counts, err := db.OpenCounts(ctx, cfg.DatabaseURL, db.CountConns(cfg.DBMaxConns), cfg.QueryTimeout)
	if err != nil {
		return err
	}
	defer counts.Close()
	search, err := db.OpenSearch(ctx, cfg.DatabaseURL, cfg.DBMaxConns, cfg.QueryTimeout)
	if err != nil {
		return err
	}
	defer search.Close()
	jobs, err := db.OpenBackground(ctx, cfg.DatabaseURL, cfg.ImportWorkers)
	if err != nil {
		return err
	}
	// Closed after the queue has stopped (defers run last in, first out).
	defer jobs.Close()
	if err := retry(ctx, log, "migrate", func() error { return db.Migrate(jobs) }); err != nil {
		return err
	}
	if err := migrateRiver(ctx, jobs); err != nil {
		return err
	}
	if missing, err := db.MissingFunctions(ctx, pool); err != nil {
		return err
	} else if missing != "" {
		return fmt.Errorf("the server's database role may not call %s: the migrations ran as a superuser that took them from PUBLIC "+
			"(migration 33); serve as the role that ran them or as the database owner, or GRANT EXECUTE on them to this role", missing)
	}
	if cfg.PprofAddr != "" {
		go servePprof(log, cfg.PprofAddr)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return fmt.Errorf("DATA_DIR: %w", err)
	}
	created, err := accounts.EnsureAdmin(ctx, pool, cfg.AdminUsername, cfg.AdminEmail, cfg.AdminPassword)
	if err != nil {
		return err
	}
	if created {
		log.Info("created the first admin account", "username", cfg.AdminUsername)
	}

	role, err := ingest.ProvisionImportRole(ctx, jobs, cfg.IngestDatabaseURL, cfg.JWTSecretKey)
	if err != nil {
		return err
	}
	if err := gdalcmd.CheckLimits(gdalLimits(cfg)); err != nil {
		return err
	}
	staging := stagingOf(cfg, store.New(jobs), log)
	objects, err := objectsOf(cfg)
	if err != nil {
		return err
	}
	// The STAC import's downloads run on the imports' River client; the service is completed
	// once the request services exist (services).
	stacImports := &stacimport.Service{}
	manifests := &manifest.Service{} // completed with the services too
	importer := &ingest.Importer{Pool: jobs, Q: store.New(jobs), Log: log, DataDir: cfg.DataDir,
		Bounds: bounds(cfg), GDAL: gdalLimits(cfg), Role: role, Stall: cfg.ImportStallTimeout, Rescues: cfg.ImportStallRescues, Staging: staging, Objects: objects,
		AnalysisTimeout: cfg.AnalysisTimeout, Finish: finishing(stacImports.Finish, manifests.Finish), RetireGrace: cfg.VRTRetireGrace,
		Refs: &maps.Service{Q: store.New(jobs)}} // a reupload's removed columns leave map layers as a forced drop does
	assistant := aiJobs(cfg, jobs, log)
	// The refresh schedule runs on the same client; its service is set once the services exist.
	refreshes := &sources.Scheduler{Log: log}
	// A stopping server lets its running jobs go on for half its shutdown time, then hands the
	// imports still running back to the queue (another replica takes them) before it exits.
	queue, err := ingest.NewQueue(jobs, importer, log, cfg.ImportWorkers, stacImports.Lane(stacDownloads).Config, ai.Jobs(assistant, embedRefresh),
		refreshes.Jobs(cfg.RefreshScheduleTick), ingest.SoftStop(cfg.ShutdownTimeout/2))
	if err != nil {
		return err
	}

	e := web.New(cfg, log)
	sandbox, sandboxRole, err := sqlquery.OpenSandbox(ctx, pool, int32(cfg.SQLMaxConcurrent))
	if err != nil {
		return err
	}
	defer sandbox.Close()
	if err := sqlquery.LimitValues(ctx, pool, cfg.SQLMaxValueBytes); err != nil {
		return err
	}
	if fns, err := sqlquery.Unconfined(ctx, pool, sandboxRole); err != nil {
		return err
	} else if fns != "" {
		log.Warn("read-only SQL: the sandbox role may still use "+fns+"; run the migrations once as a superuser (migrations 33 and 53)",
			"role", sandboxRole)
	}
	// GDAL reads registered rasters through this loopback server only (internal/rangeproxy).
	proxy, err := rangeproxy.Start()
	if err != nil {
		return err
	}
	defer func() { _ = proxy.Close() }()
	deps, err := services(cfg, pools{requests: pool, counts: counts, search: search, sandbox: sandbox}, log, queue, staging, sandboxRole, proxy)
	if err != nil {
		return err
	}
	*stacImports = *stacImportOf(cfg, deps, pool, log, queue, objects, proxy)
	deps.StacImport = stacImports
	refreshes.Service = deps.Sources
	*manifests = *manifestsOf(cfg, deps, pool, log)
	deps.Manifests = manifests
	// Workers start once every service they call exists (a STAC download left queued by a
	// stopped server may run at once).
	if err := queue.Start(ctx); err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
		defer cancel()
		_ = queue.Stop(sctx)
	}()
	go deps.AI.KeepIndex(ctx, embedRefresh) // semantic search reads the embeddings any server wrote
	go deps.Catalog.Watch(ctx)              // kept records follow every change, from any server
	go deps.Catalog.WriteEvents(ctx)        // views and exports reach the history off the request path
	srv := handlers.New(deps)
	handlers.Mount(e, doc, cfg, srv)
	handlers.MountStorage(e, cfg, srv)
	if err := apidocs.Register(e, "/api", doc, openapi.YAML); err != nil {
		return err
	}
	log.Info("meridian listening", "addr", cfg.ListenAddr, "api", cfg.BaseURL+"/api", "version", config.Version, "build", config.Build)
	return web.Serve(ctx, e, cfg, log)
}

// migrateRiver applies River's own migrations under an advisory lock, so replicas starting
// together do not race on them.
func migrateRiver(ctx context.Context, pool *pgxpool.Pool) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(hashtext('meridian.river_migrate'))"); err != nil {
		return err
	}
	defer func() {
		// Released with the connection anyway if this fails.
		_, _ = conn.Exec(context.Background(), "SELECT pg_advisory_unlock(hashtext('meridian.river_migrate'))")
	}()
	if err := ingest.MigrateRiver(ctx, pool); err != nil {
		return fmt.Errorf("river migrations: %w", err)
	}
	return nil
}

// retry runs f until it succeeds, for up to a minute while the database is unreachable, so a
// server started alongside its database does not give up during the database's start-up.
func retry(ctx context.Context, log *slog.Logger, what string, f func() error) error {
	deadline := time.Now().Add(time.Minute)
	for {
		err := f()
		if err == nil || !db.Unavailable(err) || time.Now().After(deadline) {
			return err
		}
		log.Warn("database not reachable yet; retrying", "step", what, "err", err)
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), err)
		case <-time.After(2 * time.Second):
		}
	}
}

// servePprof serves the runtime profiles on their own loopback listener (config checks the
// address), never on the API's.
func servePprof(log *slog.Logger, addr string) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	log.Info("runtime profiles served", "addr", addr)
	if err := srv.ListenAndServe(); err != nil {
		log.Error("pprof listener stopped", "err", err)
	}
}

// finishHook is ingest.Importer.Finish.
type finishHook = func(ctx context.Context, tx pgx.Tx, job, dataset uuid.UUID) (func(context.Context), error)

// finishing runs each hook in turn in the record's transaction (a job is a STAC item's or a
// manifest entry's, and each hook passes over the others' jobs); the afters run in order.
func finishing(hooks ...finishHook) finishHook {
	return func(ctx context.Context, tx pgx.Tx, job, dataset uuid.UUID) (func(context.Context), error) {
		var afters []func(context.Context)
		for _, h := range hooks {
			after, err := h(ctx, tx, job, dataset)
			if err != nil {
				return nil, err
			}
			if after != nil {
				afters = append(afters, after)
			}
		}
		if len(afters) == 0 {
			return nil, nil
		}
		return func(ctx context.Context) {
			for _, a := range afters {
				a(ctx)
			}
		}, nil
	}
}
