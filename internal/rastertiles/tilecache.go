package rastertiles

import (
	"container/list"
	"sync"

	"meridian/internal/cog"
)

// TileCache keeps decoded internal tiles, least recently used out first, within a bound in bytes.
// Deeper zooms cut many XYZ tiles from one internal tile, and the XYZ tiles of an overview that
// GDAL did not align share internal tiles with their neighbours: both read and inflate each
// internal tile once while it is kept. Rendered tiles are kept by internal/tiles' cache.
type TileCache struct {
	mu      sync.Mutex
	max     int64
	size    int64
	order   *list.List
	entries map[tileKey]*list.Element
}

type tileKey struct {
	r               *Raster
	level, col, row int
}

type cachedTile struct {
	data, mask *cog.Tile
}

type tileEntry struct {
	key tileKey
	cachedTile
}

func (c cachedTile) cost() int64 {
	n := int64(256)
	if c.data != nil {
		n += int64(len(c.data.Data))
	}
	if c.mask != nil {
		n += int64(len(c.mask.Data))
	}
	return n
}

// NewTileCache keeps up to maxBytes of decoded tiles.
func NewTileCache(maxBytes int64) *TileCache {
	return &TileCache{max: maxBytes, order: list.New(), entries: map[tileKey]*list.Element{}}
}

func (c *TileCache) get(k tileKey) (cachedTile, bool) {
	if c == nil {
		return cachedTile{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[k]
	if !ok {
		return cachedTile{}, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*tileEntry).cachedTile, true
}

func (c *TileCache) put(k tileKey, t cachedTile) {
	if c == nil || t.cost() > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[k]; ok {
		return
	}
	c.entries[k] = c.order.PushFront(&tileEntry{key: k, cachedTile: t})
	c.size += t.cost()
	for c.size > c.max {
		el := c.order.Back()
		e := el.Value.(*tileEntry)
		c.order.Remove(el)
		delete(c.entries, e.key)
		c.size -= e.cost()
	}
}

// forget drops the tiles of r (a raster closed or replaced).
func (c *TileCache) forget(r *Raster) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, el := range c.entries {
		if k.r == r {
			c.size -= el.Value.(*tileEntry).cost()
			c.order.Remove(el)
			delete(c.entries, k)
		}
	}
}
