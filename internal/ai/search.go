package ai

import (
	"container/list"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"meridian/internal/apperr"
)

// Semantic search: a query text is embedded by the configured model (kept per text), checked
// against the configured dimension count, and the index answers the nearest records; the
// catalog then keeps those the caller may see and that match the other filters
// (catalog.RecordQuery.Nearest).

// SemanticCandidates is how many nearest records a semantic or hybrid search considers.
const SemanticCandidates = 200

// queryCacheSize bounds the query texts whose vectors (and rankings) are kept.
const queryCacheSize = 1024

// queryCache keeps the vectors of query texts and the last ranking made for each, least
// recently used out first. A ranking is the same for every caller (visibility is applied
// afterwards, in SQL), and holds while the index does not change.
type queryCache struct {
	mu      sync.Mutex
	order   *list.List
	entries map[string]*list.Element
}

type queryEntry struct {
	key     string
	vec     []float32
	ranked  []uuid.UUID
	rankGen uint64
	ranks   bool
}

func (c *queryCache) get(key string) (queryEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		return queryEntry{}, false
	}
	el, ok := c.entries[key]
	if !ok {
		return queryEntry{}, false
	}
	c.order.MoveToFront(el)
	return *el.Value.(*queryEntry), true
}

func (c *queryCache) put(e queryEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries, c.order = map[string]*list.Element{}, list.New()
	}
	if el, ok := c.entries[e.key]; ok {
		*el.Value.(*queryEntry) = e
		c.order.MoveToFront(el)
		return
	}
	c.entries[e.key] = c.order.PushFront(&e)
	for c.order.Len() > queryCacheSize {
		old := c.order.Back()
		c.order.Remove(old)
		delete(c.entries, old.Value.(*queryEntry).key)
	}
}

// ErrSemanticOff answers a semantic or hybrid search while it cannot run.
func semanticOff(st Setup) error {
	why := "it is switched off (setting ai.semantic_search_enabled)"
	switch {
	case !st.Enabled:
		why = "the AI features are switched off (setting ai_enabled)"
	case !st.EmbeddingsConfigured():
		why = st.EmbedNote
	case st.EmbeddingDimensions == nil:
		why = "the embedding dimensions are not set (setting embedding_dims; Detect Embedding Dims finds them)"
	}
	return apperr.Conflict("semantic search is not available: %s; search with mode=text", why)
}

// Nearest answers the records whose embeddings are nearest to text, best first: at most
// SemanticCandidates of all records, which the catalog then narrows to what the caller may see.
func (s *Service) Nearest(ctx context.Context, text string) ([]uuid.UUID, error) {
	st, err := s.Setup(ctx)
	if err != nil {
		return nil, err
	}
	if !st.SemanticAvailable() {
		return nil, semanticOff(st)
	}
	model, dims := deref(st.EmbeddingModel), *st.EmbeddingDimensions
	if err := s.ensureIndex(ctx, model, dims); err != nil {
		return nil, err
	}
	key := strings.Join([]string{model, strconv.Itoa(dims), st.EmbedURL, text}, "\x00")
	e, ok := s.queries.get(key)
	if !ok {
		callCtx, cancel := s.callContext(ctx)
		vecs, _, err := s.embeddingModel(st).embed(callCtx, []string{text})
		cancel()
		if err != nil {
			return nil, embedFailure(ctx, err)
		}
		if len(vecs[0]) != dims {
			return nil, wrongDims(len(vecs[0]), dims)
		}
		e = queryEntry{key: key, vec: vecs[0]}
	}
	if !e.ranks || e.rankGen != s.Index.generation() {
		e.ranked, e.rankGen = s.Index.Nearest(e.vec, SemanticCandidates)
		e.ranks = true
		s.queries.put(e)
	}
	return e.ranked, nil
}

// ensureIndex loads the index when it holds another model (the first semantic search of a
// server, or after the model changed); the background refresh keeps it current afterwards.
func (s *Service) ensureIndex(ctx context.Context, model string, dims int) error {
	s.Index.mu.RLock()
	ok := s.Index.key == model+"\x00"+strconv.Itoa(dims)
	s.Index.mu.RUnlock()
	if ok {
		return nil
	}
	return s.Index.Refresh(ctx, s.Q, model, dims)
}

// KeepIndex refreshes the index every interval while semantic search is on, and lets it go
// while it is off; until ctx ends.
func (s *Service) KeepIndex(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		st, err := s.Setup(ctx)
		switch {
		case err != nil:
		case st.SemanticAvailable():
			if err := s.Index.Refresh(ctx, s.Q, deref(st.EmbeddingModel), *st.EmbeddingDimensions); err != nil && ctx.Err() == nil {
				s.Log.Warn("ai: refreshing the embeddings index failed", "err", err)
			}
		case s.Index.Len() > 0:
			s.Index.drop()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// drop lets the vectors go (semantic search was switched off).
func (ix *Index) drop() {
	ix.loading.Lock()
	defer ix.loading.Unlock()
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.key, ix.ids, ix.vecs, ix.pos, ix.version, ix.ivf, ix.misplaced = "", nil, nil, nil, 0, nil, 0
	ix.gen++
}

// wrongDims is the error of a model whose vectors are not as long as the settings say.
func wrongDims(got, want int) error {
	return apperr.New(apperr.KindUpstream, "the embedding model answered vectors of %d dimensions where the settings say %d "+
		"(embedding_dims): run Detect Embedding Dims, save what it finds, and backfill the embeddings", got, want)
}

// embedFailure maps a failed embedding call like a failed chat call, naming embeddings.
func embedFailure(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	err = providerError(ctx, err)
	if ae, ok := err.(*apperr.Error); ok {
		ae.Detail = strings.Replace(ae.Detail, "the AI provider", "the embedding provider", 1)
		ae.Detail = strings.Replace(ae.Detail, "(AI_API_KEY or the setting provider_keys.ai)", "(EMBEDDING_API_KEY, AI_API_KEY or the provider key settings)", 1)
		return ae
	}
	return fmt.Errorf("embedding: %w", err)
}
