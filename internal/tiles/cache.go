package tiles

import (
	"container/list"
	"context"
	"sync"
)

// Cache keeps rendered tiles, least recently used first out, within a bound in bytes. Keys carry
// the dataset's tile version, so an edit makes new keys and nothing needs invalidating: the old
// tiles age out.
type Cache struct {
	mu      sync.Mutex
	max     int64
	size    int64
	order   *list.List // of *entry, most recent first
	entries map[string]*list.Element

	flights sync.Mutex
	pending map[string]*flight
}

type entry struct {
	key  string
	body []byte
}

// entryOverhead approximates what an entry costs beyond its key and body (list element, map
// slot, headers): the bound holds for small tiles too.
const entryOverhead = 128

func cost(key string, body []byte) int64 { return int64(len(key) + len(body) + entryOverhead) }

// NewCache keeps up to maxBytes.
func NewCache(maxBytes int64) *Cache {
	return &Cache{max: maxBytes, order: list.New(), entries: map[string]*list.Element{}, pending: map[string]*flight{}}
}

// Get returns the tile under key.
func (c *Cache) Get(key string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*entry).body, true
}

// Put keeps body under key, evicting the least recently used tiles beyond the bound. A tile
// larger than the whole bound is not kept.
func (c *Cache) Put(key string, body []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		c.size -= cost(key, el.Value.(*entry).body)
		c.order.Remove(el)
		delete(c.entries, key)
	}
	if cost(key, body) > c.max {
		return
	}
	c.entries[key] = c.order.PushFront(&entry{key: key, body: body})
	c.size += cost(key, body)
	c.evict()
}

// Resize changes the bound (a changed setting), evicting at once.
func (c *Cache) Resize(maxBytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.max = maxBytes
	c.evict()
}

func (c *Cache) evict() {
	for c.size > c.max {
		el := c.order.Back()
		e := el.Value.(*entry)
		c.order.Remove(el)
		delete(c.entries, e.key)
		c.size -= cost(e.key, e.body)
	}
}

// Stats are the cache's size in bytes and tiles.
func (c *Cache) Stats() (bytes int64, tiles int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size, len(c.entries)
}

// A flight is one rendering of a tile that identical requests wait for together. Its context
// ends when the last of them has gone away (a client closing its connection cancels the query
// only when nobody else wants the tile).
type flight struct {
	ctx     context.Context
	done    chan struct{}
	body    []byte
	err     error
	waiters int
	cancel  context.CancelFunc
}

// Fill returns the tile under key, rendering it with render when it is not kept; concurrent
// calls for one key share one rendering. A rendered tile is kept.
func (c *Cache) Fill(ctx context.Context, key string, render func(context.Context) ([]byte, error)) ([]byte, error) {
	if body, ok := c.Get(key); ok {
		return body, nil
	}
	c.flights.Lock()
	f, ok := c.pending[key]
	if !ok || f.ctx.Err() != nil { // none, or one its last waiter gave up on
		fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		f = &flight{ctx: fctx, done: make(chan struct{}), cancel: cancel}
		c.pending[key] = f
		go c.fly(fctx, key, f, render)
	}
	f.waiters++
	c.flights.Unlock()

	select {
	case <-f.done:
		return f.body, f.err
	case <-ctx.Done():
		c.flights.Lock()
		f.waiters--
		if f.waiters == 0 {
			f.cancel()
		}
		c.flights.Unlock()
		return nil, ctx.Err()
	}
}

func (c *Cache) fly(ctx context.Context, key string, f *flight, render func(context.Context) ([]byte, error)) {
	defer f.cancel()
	f.body, f.err = render(ctx)
	if f.err == nil {
		c.Put(key, f.body)
	}
	c.flights.Lock()
	if c.pending[key] == f {
		delete(c.pending, key)
	}
	c.flights.Unlock()
	close(f.done)
}
