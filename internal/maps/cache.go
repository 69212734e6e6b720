package maps

import (
	"strconv"
	"sync"

	"github.com/google/uuid"

	"meridian/internal/auth"
)

// Map documents are read far more often than anything in them changes, and a 50-layer document
// costs PostgreSQL milliseconds to build. They are kept per map and reader, and forgotten, all
// of them, whenever PostgreSQL announces a change of any map or dataset (catalog.Service.Watch;
// migrations 24 and 30) or this server changes a map. As with kept dataset records, a document is
// kept only when the listener is up and nothing was announced while it was built.
type docCache struct {
	mu    sync.Mutex
	live  bool
	epoch uint64
	docs  map[string]Doc
}

// maxDocs bounds the documents kept; past it the cache starts again empty.
const maxDocs = 10000

// Announced is the hook of catalog.Service.Announced: a change of any map or dataset, or the
// listener going up or down ("").
func (c *docCache) Announced(channel string, live bool) {
	if channel != "" && channel != "catalog_datasets" && channel != "catalog_maps" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live = live
	c.epoch++
	c.docs = nil
}

// forget drops every document: this server changed a map.
func (c *docCache) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	c.docs = nil
}

// key names a map as one reader sees it; "" for readers whose view is not kept (an embed token's).
func docKey(p auth.Principal, id uuid.UUID) string {
	if len(p.Lent) > 0 {
		return ""
	}
	return id.String() + "|" + p.UserID.String() + "|" + p.Role + "|" + strconv.FormatBool(p.IsAdmin())
}

func (c *docCache) get(key string) (Doc, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.docs[key]
	return d, c.epoch, ok
}

func (c *docCache) put(key string, d Doc, epoch uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.live || c.epoch != epoch || key == "" {
		return
	}
	if c.docs == nil || len(c.docs) >= maxDocs {
		c.docs = map[string]Doc{}
	}
	c.docs[key] = d
}
