package ai

import (
	"context"
	"strconv"
	"sync"

	"github.com/google/uuid"
	"gonum.org/v1/gonum/blas/gonum"

	"meridian/store"
)

// Index holds the records' embeddings of one model in memory and answers the records nearest to
// a vector by cosine similarity (a dot product of unit vectors). PostgreSQL here has no vector
// index (no pgvector), and a dot product per row in SQL costs seconds at 100,000 records.
//
// Below exactBelow records every record is scored: the answer is exact, and cheap (about 2 ms
// at 20,000 records of 384 dimensions). From there on an inverted file (ivf.go) answers
// instead: the records are grouped around about sqrt(N) centres found by spherical k-means, and
// a query scores the centres and then, exactly, only the records of the lists whose centres are
// nearest to it (at least 8 lists and 800 records: about 3% of 100,000 records). It misses the
// near neighbours that landed in a list it did not read: on clustered vectors, as real
// embeddings are, it finds at least 95% of the exact SemanticCandidates (TestIVFRecall), at
// a twentieth of the exact scan's cost (BenchmarkNearest: about 0.3 ms against 8 ms at 100,000
// records of 384 dimensions). The lists are trained when the index first reaches exactBelow
// records and again whenever it has doubled since; records written in between land in the list
// of their nearest centre, and changed ones move to it.
//
// The vectors are kept in the order of the lists (arrange): a list a query reads is one run of
// memory, which the processor streams, rather than a few hundred vectors scattered over the
// whole index. Scoring is bound by memory, not arithmetic, so this makes a query four times
// faster (BenchmarkNearest, 1.3 ms against 0.3 ms at 100,000 records of 384 dimensions). Records
// written after the arrangement sit at the end until an eighth of the index has been written
// since, when the refresh arranges it again.
//
// Memory: 4 bytes per dimension per record for the vectors (154 MB for 100,000 records of 384
// dimensions; twice that while an arrangement copies them), plus about 70 bytes per record for
// the ids, their places and the lists, plus the centres (4 bytes per dimension per list: 490 KB
// at 100,000 records of 384 dimensions).
// Training reads a sample of 32 records per list for k-means and then assigns every record
// once: about 3 s at 100,000 records of 384 dimensions on 2 cores (BenchmarkTrainIVF), while
// searches go on (scoring every record, or with the lists trained before).
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
	ivf     *ivf   // the lists, nil while every record is scored
	// misplaced counts the records put in the lists since the vectors were last arranged.
	misplaced int

	loading sync.Mutex // one refresh at a time; only a refresh changes what is held
}

// refreshBatch is how many embeddings one read brings.
const refreshBatch = 5000

// exactBelow is the number of records under which every record is scored.
const exactBelow = 20000

// Refresh brings the index up to date with the stored embeddings of model and dims: those written
// since it last looked; all of them again when the model changed or records were deleted. It
// trains the lists when the index has grown enough (see Index).
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
		// Another model, or some embeddings went with their records: read all again. The
		// centres of the same model still describe its vectors: the records land in their lists
		// again as they are read.
		ix.mu.Lock()
		if stale {
			ix.ivf = nil
		} else if ix.ivf != nil {
			ix.ivf = ix.ivf.emptied()
		}
		ix.key, ix.dims, ix.ids, ix.vecs, ix.pos, ix.version, ix.misplaced = key, dims, nil, nil, map[uuid.UUID]int{}, 0, 0
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
			break
		}
		batch := make([]embedded, 0, len(rows))
		for _, r := range rows {
			if len(r.Embedding) == dims {
				batch = append(batch, embedded{r.DatasetID, r.Embedding})
			}
		}
		ix.put(batch, rows[len(rows)-1].Version)
		after = rows[len(rows)-1].Version
	}
	ix.train()
	return nil
}

// embedded is a record's vector as read.
type embedded struct {
	id  uuid.UUID
	vec []float32
}

// put adds or replaces the vectors of a batch of records, the newest version among them being
// version. Each lands in the list of its nearest centre, found before the lock is taken (the
// centres change only in a refresh, which the caller is).
func (ix *Index) put(batch []embedded, version int64) {
	ix.mu.RLock()
	lists := ix.ivf
	ix.mu.RUnlock()
	var to []int32
	if lists != nil {
		to = make([]int32, len(batch))
		parallel(len(batch), func(i int) { to[i] = lists.nearestList(batch[i].vec) })
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	d := ix.dims
	for n, r := range batch {
		i, ok := ix.pos[r.id]
		if ok {
			copy(ix.vecs[i*d:(i+1)*d], r.vec)
		} else {
			i = len(ix.ids)
			ix.pos[r.id] = i
			ix.ids = append(ix.ids, r.id)
			ix.vecs = append(ix.vecs, r.vec...)
		}
		if lists != nil {
			if !ok || lists.list[i] != to[n] {
				ix.misplaced++
			}
			lists.place(i, to[n])
		}
	}
	ix.version = max(ix.version, version)
	ix.gen++
}

// train makes the lists when the index has reached exactBelow records or doubled since they
// were made, and lets them go when it has shrunk below exactBelow. The vectors change only in a
// refresh, which the caller is, so they are read here without the lock; searches go on meanwhile
// with what was there.
func (ix *Index) train() {
	ix.mu.RLock()
	n, d, vecs, cur := len(ix.ids), ix.dims, ix.vecs, ix.ivf
	ix.mu.RUnlock()
	if n < exactBelow {
		if cur != nil {
			ix.mu.Lock()
			ix.ivf = nil
			ix.gen++
			ix.mu.Unlock()
		}
		return
	}
	if cur != nil && n < 2*cur.trainedAt {
		ix.mu.RLock()
		misplaced := ix.misplaced
		ix.mu.RUnlock()
		if misplaced > n/8 {
			ix.arrange(cur)
		}
		return
	}
	ix.arrange(trainIVF(vecs[:n*d], d))
}

// arrange puts the records in the order of f's lists (see Index) and makes f the index's lists.
// Like train, it runs in a refresh, the only writer, and copies without the lock; searches see
// the old order or the new, never a mix.
func (ix *Index) arrange(f *ivf) {
	ix.mu.RLock()
	ids, vecs, d := ix.ids, ix.vecs, ix.dims
	ix.mu.RUnlock()
	n := len(ids)
	order := make([]int32, 0, n)
	lists, list, at := make([][]int32, len(f.lists)), make([]int32, n), make([]int32, n)
	for c, l := range f.lists {
		lists[c] = make([]int32, len(l))
		for j, i := range l {
			k := len(order)
			lists[c][j], list[k], at[k] = int32(k), int32(c), int32(j)
			order = append(order, i)
		}
	}
	for i := range n {
		if i >= len(f.list) || f.list[i] < 0 { // in no list: kept, after the lists
			list[len(order)], at[len(order)] = -1, 0
			order = append(order, int32(i))
		}
	}
	ids2, vecs2, pos := make([]uuid.UUID, n), make([]float32, n*d), make(map[uuid.UUID]int, n)
	for k, i := range order {
		ids2[k], pos[ids[i]] = ids[i], k
		copy(vecs2[k*d:(k+1)*d], vecs[int(i)*d:(int(i)+1)*d])
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	f.lists, f.list, f.at = lists, list, at
	ix.ids, ix.vecs, ix.pos, ix.ivf, ix.misplaced = ids2, vecs2, pos, f, 0
	ix.gen++
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
// generation of the index they were ranked in: exactly below exactBelow records, from the lists
// nearest to v above (see Index).
func (ix *Index) Nearest(v []float32, k int) ([]uuid.UUID, uint64) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if len(v) != ix.dims || k <= 0 {
		return nil, ix.gen
	}
	var h scoreHeap
	if ix.ivf != nil {
		h = ix.ivf.nearest(v, ix.vecs, k)
	} else {
		h = ix.exact(v, k)
	}
	out := make([]uuid.UUID, len(h))
	for n := len(h) - 1; n >= 0; n-- {
		out[n] = ix.ids[h.pop().i]
	}
	return out, ix.gen
}

// exact scores every record.
func (ix *Index) exact(v []float32, k int) scoreHeap {
	h := make(scoreHeap, 0, k+1)
	d, vecs := ix.dims, ix.vecs
	for i := range ix.ids {
		h.offer(i, dot(v, vecs[i*d:(i+1)*d]), k)
	}
	return h
}

// dot is the dot product of two vectors of the same length: gonum's BLAS, whose float32 dot
// product is SIMD assembly on amd64 (about 3.5 times the plain loop's speed here), plain Go
// elsewhere; no cgo.
func dot(a, b []float32) float32 {
	return blas.Sdot(len(a), a, 1, b, 1)
}

// blas is gonum's BLAS in Go and assembly.
var blas gonum.Implementation

type scored struct {
	i     int
	score float32
}

// scoreHeap is a min-heap of the best scores so far: its root is the one to beat. Its sifting
// is written for the type, not through container/heap's interface: a query offers thousands of
// scores, and the interface's calls per comparison and swap were most of the heap's cost.
type scoreHeap []scored

// worse orders the heap: a lower score, or an equal score of a later record (the earlier record
// ranks first).
func worse(a, b scored) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return a.i > b.i
}

// offer keeps record i with score s when it is among the k best so far.
func (h *scoreHeap) offer(i int, s float32, k int) {
	x := scored{i, s}
	if len(*h) < k {
		*h = append(*h, x)
		h.up(len(*h) - 1)
	} else if worse((*h)[0], x) {
		(*h)[0] = x
		h.down(0)
	}
}

// pop removes and answers the worst kept.
func (h *scoreHeap) pop() scored {
	old := *h
	top, n := old[0], len(old)-1
	old[0] = old[n]
	*h = old[:n]
	h.down(0)
	return top
}

func (h scoreHeap) up(j int) {
	for j > 0 {
		p := (j - 1) / 2
		if !worse(h[j], h[p]) {
			return
		}
		h[j], h[p] = h[p], h[j]
		j = p
	}
}

func (h scoreHeap) down(j int) {
	n := len(h)
	for {
		c := 2*j + 1
		if c >= n {
			return
		}
		if r := c + 1; r < n && worse(h[r], h[c]) {
			c = r
		}
		if !worse(h[c], h[j]) {
			return
		}
		h[j], h[c] = h[c], h[j]
		j = c
	}
}
