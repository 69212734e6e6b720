package catalog

import (
	"context"
	"strings"
	"sync"
	"unicode/utf8"
)

// Most text searches match no collection, yet asking cost every one of them a statement after
// its page. The names and descriptions of the collections are kept here, lower-cased, so that a
// search whose words no collection holds asks nothing; one that some collection may match asks
// the database as before, which counts the members the caller may read. As with kept records,
// the texts are kept only while the listener is up and when no change of the collections
// (channel catalog_collections, migration 146) was announced during their read: a new or renamed
// collection reaches every replica as fast as the announcement.

// AnnouncedCollections is the channel of changes of the collections (no payload).
const AnnouncedCollections = "catalog_collections"

// maxCollectionTexts bounds the collections kept: a catalog with more asks every time, since
// matching them all in memory would no longer be cheaper than the statement.
const maxCollectionTexts = 2000

type collectionTexts struct {
	mu    sync.Mutex
	live  bool
	epoch uint64
	kept  bool
	texts []string // per collection, "name description" lower-cased
}

// mayHold reports whether one of texts (lower-cased) may hold every one of words, as ILIKE
// '%word%' finds them: false only when none does. A word or text that is not ASCII may, since
// PostgreSQL folds its case by the database's locale, not as Go does.
func mayHold(texts []string, words []string) bool {
	lower := make([]string, len(words))
	for i, w := range words {
		if !ascii(w) {
			return true
		}
		lower[i] = strings.ToLower(w)
	}
	for _, t := range texts {
		if !ascii(t) {
			return true
		}
		all := true
		for _, w := range lower {
			if !strings.Contains(t, w) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// get answers the kept texts (kept), else the epoch a read must be put back with and whether it
// would be kept (live).
func (c *collectionTexts) get() (texts []string, epoch uint64, kept, live bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.texts, c.epoch, c.kept, c.live
}

// put keeps texts, read while the announcements numbered epoch: only when none arrived since and
// the listener is up.
func (c *collectionTexts) put(texts []string, epoch uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.live && c.epoch == epoch && len(texts) <= maxCollectionTexts {
		c.texts, c.kept = texts, true
	}
}

// heard drops the kept texts after an announcement, and notes whether the listener is up.
func (c *collectionTexts) heard(live bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live = live
	c.drop()
}

// forget drops the kept texts at once, after this server changed the collections: its next
// search must not wait for the announcement.
func (c *collectionTexts) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drop()
}

// drop lets the kept texts go, and any read in flight with them; c.mu is held.
func (c *collectionTexts) drop() {
	c.kept, c.texts = false, nil
	c.epoch++
}

// ForgetCollections drops what is kept of the collections after a change made by other means
// than this package's (a configuration import), without waiting for the announcement.
func (s *Service) ForgetCollections() { s.collections.forget() }

// anyCollectionMayMatch reports whether some collection may hold every one of words (see
// collectionTexts), reading the texts when none are kept; without a listener it answers true
// at once, and the statement that counts the members finds out.
func (s *Service) anyCollectionMayMatch(ctx context.Context, words []string) (bool, error) {
	texts, epoch, kept, live := s.collections.get()
	if !kept && !live {
		return true, nil
	}
	if !kept {
		rows, err := s.Q.ListCollectionTexts(ctx, maxCollectionTexts+1)
		if err != nil {
			return false, err
		}
		texts = make([]string, len(rows))
		for i, t := range rows {
			texts[i] = strings.ToLower(t)
		}
		s.collections.put(texts, epoch)
		if len(texts) > maxCollectionTexts {
			return true, nil
		}
	}
	return mayHold(texts, words), nil
}
