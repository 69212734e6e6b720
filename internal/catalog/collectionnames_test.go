package catalog

import "testing"

// TestMayHold: the kept texts rule a collection out only when ILIKE '%word%' of every word
// could not find it; anything not ASCII is left to the database.
func TestMayHold(t *testing.T) {
	texts := []string{"coastal wetlands survey", "roads and railways 100%"}
	for _, c := range []struct {
		words []string
		want  bool
	}{
		{[]string{"WETLANDS"}, true},
		{[]string{"coast", "survey"}, true},       // both in one text
		{[]string{"wetlands", "railways"}, false}, // each in another text
		{[]string{"rail"}, true},                  // inside a word, as %rail% finds it
		{[]string{"100%"}, true},                  // the pattern's wildcards are escaped: literal
		{[]string{"forests"}, false},
		{[]string{"fjärd"}, true}, // not ASCII: the database decides
	} {
		if got := mayHold(texts, c.words); got != c.want {
			t.Errorf("mayHold(%q) = %v, want %v", c.words, got, c.want)
		}
	}
	if !mayHold([]string{"ÅLAND archipelago"}, []string{"archipelago"}) {
		t.Error("a text that is not ASCII was ruled out")
	}
	if mayHold(nil, []string{"anything"}) {
		t.Error("no collection, yet one may hold the word")
	}
}
