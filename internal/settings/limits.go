package settings

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Uploads are the upload limits an admin sets (storage tab). Each applies within the bound the
// environment sets (MAX_UPLOAD_BYTES, the formats this build reads): a setting narrows, never
// widens.
type Uploads struct {
	MaxSizeMB int64
	// Extensions is the admin's list of accepted extensions; nil while it was never saved, so
	// that every format this build reads is accepted (the default names formats of other
	// builds and leaves out some of this one's).
	Extensions             []string
	MaxStorageBytesPerUser int64 // 0: no cap
	MaxDatasetsPerUser     int64 // 0: no cap
}

// Uploads reads the upload limits in one query.
func (r Reader) Uploads(ctx context.Context) (Uploads, error) {
	var u Uploads
	var exts string
	err := r.load(ctx, map[string]any{"uploads.max_size_mb": &u.MaxSizeMB, "uploads.allowed_extensions": &exts,
		"uploads.max_storage_bytes_per_user": &u.MaxStorageBytesPerUser, "uploads.max_datasets_per_user": &u.MaxDatasetsPerUser})
	if err != nil {
		return u, err
	}
	saved, err := r.Q.ListSettingKeysWithPrefix(ctx, "uploads.allowed_extensions")
	if len(saved) > 0 {
		for _, e := range strings.Split(exts, ",") {
			u.Extensions = append(u.Extensions, strings.ToLower(strings.TrimSpace(e)))
		}
	}
	return u, err
}

// Accepts tells whether ext (".gpkg") may be uploaded, given the extensions this build reads.
func (u Uploads) Accepts(ext string, readable []string) bool {
	ext = strings.ToLower(ext)
	return slices.Contains(readable, ext) && (u.Extensions == nil || slices.Contains(u.Extensions, ext))
}

// MaxBytes is the largest upload: the setting, within bound (MAX_UPLOAD_BYTES).
func (u Uploads) MaxBytes(bound int64) int64 {
	return min(u.MaxSizeMB<<20, bound)
}

// EnabledPlugins reads the map plugins an admin switched on (Get Enabled Plugins).
func (r Reader) EnabledPlugins(ctx context.Context) ([]string, error) {
	var out []string
	err := r.load(ctx, map[string]any{"map.enabled_plugins": &out})
	return out, err
}

// ItemsPageMax keeps ogc.items_max_page_size for OGC items requests, which are too many for a
// settings query each: the value is read again at most once per MaxAge, so another server's
// change shows within that time, and at once on the server that saved it (Admin.Changed).
type ItemsPageMax struct {
	Reader Reader
	Bound  int // OGC_MAX_LIMIT: the setting never widens it
	MaxAge time.Duration

	cur     atomic.Pointer[pageMax]
	loading sync.Mutex
}

type pageMax struct {
	n  int
	at time.Time
}

// Get is the largest items page now. While one request reads the setting again, others use the
// value they have; a failed read keeps the last value (the bound before any).
func (m *ItemsPageMax) Get(ctx context.Context) int {
	c := m.cur.Load()
	if c != nil && time.Since(c.at) < m.MaxAge {
		return c.n
	}
	if c != nil && !m.loading.TryLock() {
		return c.n
	}
	if c == nil {
		m.loading.Lock()
	}
	defer m.loading.Unlock()
	if c2 := m.cur.Load(); c2 != c && c2 != nil {
		return c2.n // read by another request meanwhile
	}
	n := m.Bound
	if c != nil {
		n = c.n
	}
	var v int
	if err := m.Reader.load(ctx, map[string]any{"ogc.items_max_page_size": &v}); err == nil {
		n = min(max(v, 1), m.Bound)
	}
	m.cur.Store(&pageMax{n: n, at: time.Now()})
	return n
}

// Forget makes the next Get read the setting again.
func (m *ItemsPageMax) Forget() { m.cur.Store(nil) }
