package conformance

import (
	"context"
	"net/http"
	"strconv"
	"testing"
)

// TestFeatureReadsSeeChangesMadeOnAnotherReplica: servers keep dataset records for feature reads
// (internal/catalog/reads.go); a change committed through one server is seen by the very next
// read on another, with no message between them.
func TestFeatureReadsSeeChangesMadeOnAnotherReplica(t *testing.T) {
	owner := newUser(t, "editor")
	id := ogcDataset(t, owner, "public")
	second, err := Start(context.Background(), server.DBURL, "RATE_LIMIT_ENABLED=false")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(second.Stop)
	hc := &http.Client{}
	items := "/collections/" + id + "/items"
	first, _, _ := features(t, call(t, "GET", items+"?limit=1", nil))
	one := items + "/" + strconv.Itoa(first[0])
	read := func(what string, path string, want int) reply {
		t.Helper()
		r := callAt(t, hc, second.APIRoot, "GET", path, nil)
		if r.Status != want {
			t.Fatalf("%s on the second server: %d, want %d: %s", what, r.Status, want, r.Body)
		}
		return r
	}
	// Twice: the second read finds the record kept by the first.
	for range 2 {
		read("the feature", one, 200)
		read("the page", items, 200)
	}

	// Hidden on the first server: the second answers 404 at once, and serves again once public.
	patch := func(body map[string]any) {
		t.Helper()
		if r := call(t, "PATCH", "/datasets/"+id, body, bearer(owner.Access)...); r.Status != 200 {
			t.Fatalf("patch %v: %d %s", body, r.Status, r.Body)
		}
	}
	patch(map[string]any{"visibility": "private"})
	read("the feature of a now private dataset", one, 404)
	read("the page of a now private dataset", items, 404)
	patch(map[string]any{"visibility": "public"})
	read("the feature once public again", one, 200)

	// A feature added through the first server is counted by the second's next page.
	before := read("the page", items, 200).JSON(t)["numberMatched"].(float64)
	add := call(t, "POST", "/datasets/"+id+"/features/", map[string]any{"geometry": map[string]any{"type": "Point", "coordinates": []float64{1, 2}},
		"properties": map[string]any{"name": "added"}}, bearer(owner.Access)...)
	if add.Status != 201 {
		t.Fatalf("add a feature: %d %s", add.Status, add.Body)
	}
	if after := read("the page", items, 200).JSON(t)["numberMatched"].(float64); after != before+1 {
		t.Fatalf("numberMatched on the second server after an insert: %v, want %v", after, before+1)
	}

	// Deleted through the first server: gone on the second.
	if r := call(t, "DELETE", "/datasets/"+id, nil, bearer(owner.Access)...); r.Status != 204 && r.Status != 200 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	read("the feature of a deleted dataset", one, 404)
}
