package catalog

import (
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestViewsQueuedOncePerCallerAndHour(t *testing.T) {
	var e events
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	a, b := viewKey{dataset: uuid.New(), caller: uuid.New()}, viewKey{dataset: uuid.New()}
	steps := []struct {
		key  viewKey
		at   time.Duration
		want bool
	}{
		{a, 0, true}, {a, time.Minute, false}, {b, time.Minute, true}, {a, 59 * time.Minute, false},
		{a, time.Hour, true}, {b, 61 * time.Minute, true}, {a, 90 * time.Minute, false},
	}
	for i, s := range steps {
		if got := e.firstView(s.key, now.Add(s.at)); got != s.want {
			t.Fatalf("step %d: first view %v, want %v", i, got, s.want)
		}
	}
	// A view the queue could not take is forgotten: the next one is queued.
	e.forget(a)
	if !e.firstView(a, now.Add(91*time.Minute)) {
		t.Fatal("a forgotten view was not queued again")
	}
	// The queue refuses rather than blocks when full.
	for range eventQueue {
		if !e.add(datasetEvent{}) {
			t.Fatal("the queue refused before it was full")
		}
	}
	if e.add(datasetEvent{}) {
		t.Fatal("a full queue took one more event")
	}
}
