package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"meridian/internal/backup"
	"meridian/internal/config"
)

// backupCommand runs `meridian backup --out DIR` or `meridian restore --from DIR` with the
// server's own configuration (DATABASE_URL, DATA_DIR, S3_*).
func backupCommand(name string, args []string) error {
	fl := flag.NewFlagSet(name, flag.ContinueOnError)
	dirFlag, usage := "out", "the backup directory to write (new or empty)"
	if name == "restore" {
		dirFlag, usage = "from", "the backup directory to restore"
	}
	dir := fl.String(dirFlag, "", usage)
	if err := fl.Parse(args); err != nil {
		return err
	}
	if *dir == "" || fl.NArg() > 0 {
		return fmt.Errorf("usage: meridian %s --%s DIR", name, dirFlag)
	}
	cfg, err := config.Load()
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	o := backup.Options{DatabaseURL: cfg.DatabaseURL, DataDir: cfg.DataDir, Dir: *dir, ObjectStorage: "local", Log: newLogger(cfg)}
	if cfg.S3Endpoint != "" {
		o.ObjectStorage = "s3"
	}
	if name == "restore" {
		m, err := backup.Restore(ctx, o)
		if err != nil {
			return fmt.Errorf("restore: %w", err)
		}
		fmt.Printf("restored the backup of %s taken at %s (schema version %d, %d files)\n", m.Database, m.TakenAt.Format("2006-01-02T15:04:05Z"), m.SchemaVersion, m.Files)
		return nil
	}
	m, err := backup.Backup(ctx, o)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	fmt.Printf("backed up %s at %s to %s (schema version %d, %d files, %d bytes)\n", m.Database, m.TakenAt.Format("2006-01-02T15:04:05Z"), *dir, m.SchemaVersion, m.Files, m.FileBytes)
	if o.ObjectStorage == "s3" {
		fmt.Printf("the raster COGs are in the bucket %s, not in this backup: mirror it (for example: mc mirror)\n", cfg.S3Bucket)
	}
	return nil
}
