package ai

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
)

// ivf is an inverted file over the index's vectors: centres found by spherical k-means, and per
// centre the list of the records nearest to it. A query scores the centres, then exactly the
// records of the lists of the nearest ones (see Index). The centres never change once made; the
// lists change under the index's lock.
type ivf struct {
	dims      int
	centres   []float32 // len(lists) * dims, unit vectors
	lists     [][]int32 // per centre, the records (their places in the index) nearest to it
	list      []int32   // per record, its list; -1 while it is in none
	at        []int32   // per record, its place in its list
	trainedAt int       // how many records the centres were made from
}

const (
	// trainPerList is how many sample records per centre k-means reads: the centres of a
	// sample describe the lists about as well as those of every record, at a fraction of the
	// cost.
	trainPerList = 32
	// trainRounds is how many rounds k-means makes: later rounds barely move the centres.
	trainRounds = 8
	// probeShare is the share of the lists a query reads (at least probeMin of them and
	// probeRecords times as many records as it answers): TestIVFRecall holds it to recall.
	probeShare   = 0.025
	probeMin     = 8
	probeRecords = 4
)

// listCount is how many lists an index of n records has: about sqrt(n), which keeps both the
// centres a query scores and the records of the lists it reads small (at 100,000 records, 316
// centres, lists of about 316 records).
func listCount(n int) int {
	return max(1, int(math.Sqrt(float64(n))))
}

// trainIVF makes the lists of the records whose vectors of d dimensions vecs holds.
func trainIVF(vecs []float32, d int) *ivf {
	n := len(vecs) / d
	nl := listCount(n)
	rnd := rand.New(rand.NewPCG(uint64(n), uint64(d)))
	sample := rnd.Perm(n)[:min(n, trainPerList*nl)]
	f := &ivf{dims: d, centres: make([]float32, nl*d), trainedAt: n}
	for c := range nl {
		copy(f.centres[c*d:(c+1)*d], vecs[sample[c]*d:(sample[c]+1)*d])
	}
	near := make([]int32, len(sample))
	sums := make([]float64, nl*d)
	counts := make([]int, nl)
	for range trainRounds {
		parallel(len(sample), func(i int) { near[i] = f.nearestList(vecs[sample[i]*d : (sample[i]+1)*d]) })
		clear(sums)
		clear(counts)
		for i, s := range sample {
			c := int(near[i])
			counts[c]++
			for j, x := range vecs[s*d : (s+1)*d] {
				sums[c*d+j] += float64(x)
			}
		}
		for c := range nl {
			if counts[c] == 0 {
				// An empty centre starts again from a record drawn at random.
				s := sample[rnd.IntN(len(sample))]
				copy(f.centres[c*d:(c+1)*d], vecs[s*d:(s+1)*d])
				continue
			}
			var norm float64
			for _, x := range sums[c*d : (c+1)*d] {
				norm += x * x
			}
			if norm == 0 {
				continue
			}
			norm = math.Sqrt(norm)
			for j, x := range sums[c*d : (c+1)*d] {
				f.centres[c*d+j] = float32(x / norm)
			}
		}
	}
	f.lists = make([][]int32, nl)
	f.list, f.at = make([]int32, n), make([]int32, n)
	parallel(n, func(i int) { f.list[i] = f.nearestList(vecs[i*d : (i+1)*d]) })
	for i, c := range f.list {
		f.at[i] = int32(len(f.lists[c]))
		f.lists[c] = append(f.lists[c], int32(i))
	}
	return f
}

// emptied is f's centres with no records in its lists (the index is read again).
func (f *ivf) emptied() *ivf {
	return &ivf{dims: f.dims, centres: f.centres, lists: make([][]int32, len(f.lists)), trainedAt: f.trainedAt}
}

// nearestList is the list of the centre nearest to v.
func (f *ivf) nearestList(v []float32) int32 {
	d, best, at := f.dims, float32(math.Inf(-1)), int32(0)
	for c := range len(f.centres) / d {
		if s := dot(v, f.centres[c*d:(c+1)*d]); s > best {
			best, at = s, int32(c)
		}
	}
	return at
}

// place puts record i (its place in the index: the next one when it is new) in list c, out of
// the list it was in.
func (f *ivf) place(i int, c int32) {
	if i == len(f.list) {
		f.list, f.at = append(f.list, -1), append(f.at, 0)
	}
	old := f.list[i]
	if old == c {
		return
	}
	if old >= 0 {
		// The last record of the old list takes the leaving one's place.
		l, at := f.lists[old], f.at[i]
		last := l[len(l)-1]
		l[at], f.at[last] = last, at
		f.lists[old] = l[:len(l)-1]
	}
	f.list[i], f.at[i] = c, int32(len(f.lists[c]))
	f.lists[c] = append(f.lists[c], int32(i))
}

// probes is how many of the nearest lists a query reads at least.
func (f *ivf) probes() int {
	return min(len(f.lists), max(probeMin, int(math.Ceil(probeShare*float64(len(f.lists))))))
}

// nearest answers the k best records of the lists nearest to v, whose vectors vecs holds.
func (f *ivf) nearest(v, vecs []float32, k int) scoreHeap {
	d := f.dims
	order := make([]scored, len(f.lists))
	for c := range order {
		order[c] = scored{c, dot(v, f.centres[c*d:(c+1)*d])}
	}
	slices.SortFunc(order, func(a, b scored) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return a.i - b.i
	})
	h := make(scoreHeap, 0, k+1)
	probes, read := f.probes(), 0
	for n, c := range order {
		if n >= probes && read >= probeRecords*k {
			break
		}
		for _, i := range f.lists[c.i] {
			h.offer(int(i), dot(v, vecs[int(i)*d:(int(i)+1)*d]), k)
		}
		read += len(f.lists[c.i])
	}
	return h
}

// parallel calls fn for 0 to n-1 on every core.
func parallel(n int, fn func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), max(1, n/64))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w * n / workers; i < (w+1)*n/workers; i++ {
				fn(i)
			}
		}()
	}
	wg.Wait()
}
