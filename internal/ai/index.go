package ai

import (
	"container/heap"
	"context"
	"strconv"
	"sync"

	"github.com/google/uuid"

	"meridian/store"
)

// Index holds the records' embeddings of one model in memory and answers the records nearest to
// a vector by exact cosine similarity (a dot product of unit vectors) over all of them.
// PostgreSQL here has no vector index (no pgvector), and a dot product per row in SQL costs
// seconds at 100,000 records; a scan in Go costs milliseconds (README, "Semantic search").
// Memory: 4 bytes per dimension per record (100 MB for 100,000 records of 256 dimensions).
//
// Each server keeps its own copy, read incrementally: an embedding written anywhere gets a new
// version (migration 96), and Refresh reads the versions it has not seen.
type Index struct {
	mu      sync.RWMutex
	key     string // model and dimensions of what is held
	dims    int
	ids     []uuid.UUID
	vecs    []float32 // len(ids) * dims, record i at [i*dims, (i+1)*dims)
	pos     map[uuid.UUID]int
	version int64  // the newest version held
	gen     uint64 // moves on whenever what is held changes (rankings kept for a text go stale)

	loading sync.Mutex // one refresh at a time
}

// refreshBatch is how many embeddings one read brings.
const refreshBatch = 5000

// Refresh brings the index up to date with the stored embeddings of model and dims: those written
// since it last looked; all of them again when the model changed or records were deleted.
func (ix *Index) Refresh(ctx context.Context, q *store.Queries, model string, dims int) error {
	ix.loading.Lock()
	defer ix.loading.Unlock()
	key := model + "\x00" + strconv.Itoa(dims)
	ix.mu.RLock()
	stale, after, held := ix.key != key, ix.version, len(ix.ids)
	ix.mu.RUnlock()
	now, err := q.EmbeddingsVersion(ctx, store.EmbeddingsVersionParams{Model: model, Dims: int32(dims)})
	if err != nil {
		return err
	}
	if !stale && now.Version == after && now.Count == int64(held) {
		return nil
	}
	if stale || now.Count < int64(held) {
		// Another model, or some embeddings went with their records: read all again.
		ix.mu.Lock()
		ix.key, ix.dims, ix.ids, ix.vecs, ix.pos, ix.version = key, dims, nil, nil, map[uuid.UUID]int{}, 0
		ix.gen++
		ix.mu.Unlock()
		after = 0
	}
	for {
		rows, err := q.EmbeddingsSince(ctx, store.EmbeddingsSinceParams{After: after, Model: model, Dims: int32(dims), MaxRows: refreshBatch})
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		ix.mu.Lock()
		for _, r := range rows {
			if len(r.Embedding) != dims {
				continue
			}
			if i, ok := ix.pos[r.DatasetID]; ok {
				copy(ix.vecs[i*dims:(i+1)*dims], r.Embedding)
			} else {
				ix.pos[r.DatasetID] = len(ix.ids)
				ix.ids = append(ix.ids, r.DatasetID)
				ix.vecs = append(ix.vecs, r.Embedding...)
			}
			ix.version = max(ix.version, r.Version)
		}
		ix.gen++
		ix.mu.Unlock()
		after = rows[len(rows)-1].Version
	}
}

// Len is how many records the index holds.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return len(ix.ids)
}

// generation tells whether what is held changed since a ranking was made.
func (ix *Index) generation() uint64 {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.gen
}

// Nearest answers the k records most similar to the unit vector v, best first, and the
// generation of the index they were ranked in. Every record is scored: the answer is exact.
func (ix *Index) Nearest(v []float32, k int) ([]uuid.UUID, uint64) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if len(v) != ix.dims || k <= 0 {
		return nil, ix.gen
	}
	h := make(scoreHeap, 0, k+1)
	d, vecs := ix.dims, ix.vecs
	for i := range ix.ids {
		s := dot(v, vecs[i*d:(i+1)*d])
		if len(h) < k {
			heap.Push(&h, scored{i, s})
		} else if s > h[0].score {
			h[0] = scored{i, s}
			heap.Fix(&h, 0)
		}
	}
	out := make([]uuid.UUID, len(h))
	for n := len(h) - 1; n >= 0; n-- {
		out[n] = ix.ids[heap.Pop(&h).(scored).i]
	}
	return out, ix.gen
}

// dot is the dot product of two vectors of the same length, four sums at a time (the loop the
// compiler keeps free of bounds checks).
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}

type scored struct {
	i     int
	score float32
}

// scoreHeap is a min-heap of the best scores so far: its root is the one to beat.
type scoreHeap []scored

func (h scoreHeap) Len() int { return len(h) }
func (h scoreHeap) Less(i, j int) bool {
	if h[i].score != h[j].score {
		return h[i].score < h[j].score
	}
	return h[i].i > h[j].i // equal scores: the earlier record ranks first
}
func (h scoreHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *scoreHeap) Push(x any)   { *h = append(*h, x.(scored)) }
func (h *scoreHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
