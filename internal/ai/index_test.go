package ai

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/uuid"
)

// clustered draws n unit vectors of d dimensions grouped as sentence embeddings are: domains,
// topics within them, subtopics within those, and each record's own part (groups of each level
// hold 10 of the next). Uniform random vectors have no neighbours to speak of (all about
// equally far), which no index, and no search, meets in practice.
func clustered(rnd *rand.Rand, n, d, domains int, own float64) [][]float32 {
	gauss := func(scale float64) []float64 {
		v := make([]float64, d)
		for j := range v {
			v[j] = rnd.NormFloat64() * scale / math.Sqrt(float64(d))
		}
		return v
	}
	levels := []float64{1, 0.8, 0.6}
	groups := make([][][]float64, len(levels))
	for l, scale := range levels {
		groups[l] = make([][]float64, domains*int(math.Pow(10, float64(l))))
		for g := range groups[l] {
			groups[l][g] = gauss(scale)
		}
	}
	out := make([][]float32, n)
	for i := range out {
		leaf := rnd.IntN(len(groups[len(groups)-1]))
		x := gauss(own)
		for l := len(groups) - 1; l >= 0; l-- {
			for j, y := range groups[l][leaf] {
				x[j] += y
			}
			leaf /= 10
		}
		var norm float64
		for _, y := range x {
			norm += y * y
		}
		v := make([]float32, d)
		for j, y := range x {
			v[j] = float32(y / math.Sqrt(norm))
		}
		out[i] = v
	}
	return out
}

// filled is an index holding vecs, with the lists trained as a refresh would.
func filled(tb testing.TB, vecs [][]float32) *Index {
	tb.Helper()
	ix := &Index{key: "test", dims: len(vecs[0]), pos: map[uuid.UUID]int{}}
	batch := make([]embedded, len(vecs))
	for i, v := range vecs {
		batch[i] = embedded{uuid.New(), v}
	}
	for start := 0; start < len(batch); start += refreshBatch {
		ix.put(batch[start:min(start+refreshBatch, len(batch))], int64(start+1))
	}
	ix.train()
	return ix
}

// exactNearest is what Nearest answers when every record is scored.
func (ix *Index) exactNearest(v []float32, k int) []uuid.UUID {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	h := ix.exact(v, k)
	out := make([]uuid.UUID, len(h))
	for n := len(h) - 1; n >= 0; n-- {
		out[n] = ix.ids[h.pop().i]
	}
	return out
}

// recall is the share of the exact answers the index finds, over queries.
func recall(ix *Index, queries [][]float32, k int) float64 {
	found, want := 0, 0
	for _, q := range queries {
		exact := map[uuid.UUID]bool{}
		for _, id := range ix.exactNearest(q, k) {
			exact[id] = true
		}
		got, _ := ix.Nearest(q, k)
		for _, id := range got {
			if exact[id] {
				found++
			}
		}
		want += len(exact)
	}
	return float64(found) / float64(want)
}

// TestIVFRecall holds the lists to finding at least 95% of the exact SemanticCandidates on
// clustered vectors, once trained and after records were added and changed since.
func TestIVFRecall(t *testing.T) {
	const d = 384
	n := 40000
	if testing.Short() {
		n = 25000
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	all := clustered(rnd, n+n/2+100, d, 50, 1.2)
	queries := all[n+n/2:]
	ix := filled(t, all[:n])
	if ix.ivf == nil || len(ix.ivf.lists) != listCount(n) {
		t.Fatalf("no lists trained at %d records", n)
	}
	checkLists(t, ix)
	arranged(t, ix)
	r := recall(ix, queries, SemanticCandidates)
	t.Logf("recall@%d at %d records, %d lists: %.4f", SemanticCandidates, n, len(ix.ivf.lists), r)
	if r < 0.95 {
		t.Errorf("recall@%d = %.4f, want >= 0.95", SemanticCandidates, r)
	}

	// Half as many again land in their lists as refreshes read them (not enough to train again),
	// and a tenth of the first records change their vectors.
	trained := ix.ivf
	grown := all[n : n+n/2]
	batch := make([]embedded, 0, len(grown)+n/10)
	for _, v := range grown {
		batch = append(batch, embedded{uuid.New(), v})
	}
	for i := range n / 10 {
		batch = append(batch, embedded{ix.ids[i*10], grown[rnd.IntN(len(grown))]})
	}
	ix.put(batch, int64(n+1))
	ix.train()
	if ix.ivf != trained {
		t.Fatalf("lists trained again at %d records (trained at %d)", ix.Len(), trained.trainedAt)
	}
	checkLists(t, ix)
	arranged(t, ix) // n/2 new and n/10 changed records: more than an eighth, arranged again
	r = recall(ix, queries, SemanticCandidates)
	t.Logf("recall@%d after growing to %d records and changing %d: %.4f", SemanticCandidates, ix.Len(), n/10, r)
	if r < 0.95 {
		t.Errorf("recall@%d after growing = %.4f, want >= 0.95", SemanticCandidates, r)
	}
}

// arranged asserts that the records are in the order of the lists, each list one run of the
// vectors, and that each record's id still finds it.
func arranged(t *testing.T, ix *Index) {
	t.Helper()
	next := int32(0)
	for c, l := range ix.ivf.lists {
		for _, i := range l {
			if i != next {
				t.Fatalf("list %d holds record %d where %d was next: not arranged", c, i, next)
			}
			next++
		}
	}
	for i, id := range ix.ids {
		if ix.pos[id] != i {
			t.Fatalf("record %d (%s) is found at %d", i, id, ix.pos[id])
		}
	}
}

// checkLists asserts that every record is in exactly one list, the one of its nearest centre.
func checkLists(t *testing.T, ix *Index) {
	t.Helper()
	f, d := ix.ivf, ix.dims
	seen := make([]int, ix.Len())
	for c, l := range f.lists {
		for at, i := range l {
			seen[i]++
			if f.list[i] != int32(c) || f.at[i] != int32(at) {
				t.Fatalf("record %d is at %d of list %d but says %d of %d", i, at, c, f.at[i], f.list[i])
			}
		}
	}
	for i, n := range seen {
		if n != 1 {
			t.Fatalf("record %d is in %d lists", i, n)
		}
		if want := f.nearestList(ix.vecs[i*d : (i+1)*d]); f.list[i] != want {
			t.Fatalf("record %d is in list %d, its nearest centre is %d", i, f.list[i], want)
		}
	}
}

// TestIndexExactBelowThreshold: a small index scores every record, and one that shrinks below
// the threshold lets its lists go.
func TestIndexExactBelowThreshold(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	vecs := clustered(rnd, exactBelow-1, 64, 10, 1)
	ix := filled(t, vecs)
	if ix.ivf != nil {
		t.Fatalf("lists trained at %d records", ix.Len())
	}
	if r := recall(ix, vecs[:20], SemanticCandidates); r != 1 {
		t.Fatalf("recall of the exact scan = %f", r)
	}
	ix = filled(t, clustered(rnd, exactBelow, 64, 10, 1))
	if ix.ivf == nil {
		t.Fatalf("no lists at %d records", ix.Len())
	}
	checkLists(t, ix)
	ix.ivf = ix.ivf.emptied()
	ix.ids, ix.vecs, ix.pos = nil, nil, map[uuid.UUID]int{}
	ix.put([]embedded{{uuid.New(), vecs[0]}, {uuid.New(), vecs[1]}}, 1)
	checkLists(t, ix)
	ix.train()
	if ix.ivf != nil {
		t.Fatalf("lists kept at %d records", ix.Len())
	}
}

// BenchmarkNearest compares the exact scan with the lists at 100,000 clustered records of 384
// dimensions, SemanticCandidates answers.
func BenchmarkNearest(b *testing.B) {
	rnd := rand.New(rand.NewPCG(5, 6))
	all := clustered(rnd, 100000+256, 384, 50, 1.2)
	ix := filled(b, all[:100000])
	queries := all[100000:]
	b.Run("exact", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			ix.exactNearest(queries[i%len(queries)], SemanticCandidates)
		}
	})
	b.Run("ivf", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			ix.Nearest(queries[i%len(queries)], SemanticCandidates)
		}
	})
}

// BenchmarkTrainIVF is what training the lists of 100,000 records of 384 dimensions costs.
func BenchmarkTrainIVF(b *testing.B) {
	rnd := rand.New(rand.NewPCG(7, 8))
	all := clustered(rnd, 100000, 384, 50, 1.2)
	flat := make([]float32, 0, len(all)*384)
	for _, v := range all {
		flat = append(flat, v...)
	}
	for b.Loop() {
		trainIVF(flat, 384)
	}
}

// TestScoreHeapKeepsTheBest: offered scores in any order, with ties, the heap keeps the k best
// (the earlier record first among equals) and pops them worst first.
func TestScoreHeapKeepsTheBest(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 7))
	for _, k := range []int{1, 2, 7, 200} {
		all := make([]scored, 1000)
		for i := range all {
			all[i] = scored{i, float32(rnd.IntN(300))} // many ties
		}
		var h scoreHeap
		for _, x := range all {
			h.offer(x.i, x.score, k)
		}
		slices.SortFunc(all, func(a, b scored) int {
			if a.score != b.score {
				return cmp.Compare(b.score, a.score)
			}
			return a.i - b.i
		})
		for n := k - 1; n >= 0; n-- {
			if got := h.pop(); got != all[n] {
				t.Fatalf("k=%d: pop %d gave %v, want %v", k, k-1-n, got, all[n])
			}
		}
		if len(h) != 0 {
			t.Fatalf("k=%d: %d left", k, len(h))
		}
	}
}
