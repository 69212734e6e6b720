// Package backup takes and restores consistent backups of a Meridian deployment (the database,
// with pg_dump, and the files under DATA_DIR), and reports how old the latest one is.
package backup

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"meridian/internal/health"
	"meridian/store"
)

// Backup states of the health report.
const (
	StatusOK      = "ok"
	StatusStale   = "stale"
	StatusUnknown = "unknown"
)

// Info is the age of the latest backup of the database: StatusUnknown when none was ever
// recorded, StatusStale when it is older than MaxAgeMinutes.
type Info struct {
	Status        string
	LastAt        *time.Time
	AgeMinutes    *int
	MaxAgeMinutes int
}

// Monitor reads the backups recorded in the database (catalog.backup_runs, migration 125), which
// every replica shares and a restore carries over.
type Monitor struct {
	Q      *store.Queries
	MaxAge time.Duration // BACKUP_MAX_AGE_MINUTES
}

// Status answers the age of the latest recorded backup at now.
func (m Monitor) Status(ctx context.Context, now time.Time) (Info, error) {
	info := Info{Status: StatusUnknown, MaxAgeMinutes: int(m.MaxAge / time.Minute)}
	at, err := m.Q.LatestBackupRun(ctx)
	if errors.Is(err, pgx.ErrNoRows) {
		return info, nil
	}
	if err != nil {
		return info, err
	}
	at = at.UTC()
	// A snapshot a few seconds in the future (clocks of the database and this host) is fresh.
	age := max(now.Sub(at), 0)
	minutes := int(age / time.Minute)
	info.LastAt, info.AgeMinutes, info.Status = &at, &minutes, StatusOK
	if age > m.MaxAge {
		info.Status = StatusStale
	}
	return info, nil
}

// Probe is the backups provider of the health report: never required (a late backup does not
// stop the service from serving), "degraded" when stale and "not_configured" when no backup was
// ever recorded, saying so in Detail.
func (m Monitor) Probe(ctx context.Context) health.Provider {
	start := time.Now()
	info, err := m.Status(ctx, start)
	p := health.Provider{Latency: time.Since(start)}
	switch {
	case err != nil:
		p.Status, p.Detail = "down", "backup records unreadable"
	case info.Status == StatusUnknown:
		p.Status, p.Detail = "not_configured", "no backup recorded"
	case info.Status == StatusStale:
		p.Status, p.Detail = "degraded", fmt.Sprintf("the latest backup is %d minutes old (BACKUP_MAX_AGE_MINUTES %d)", *info.AgeMinutes, info.MaxAgeMinutes)
	default:
		p.Up, p.Status = true, "ok"
	}
	return p
}
