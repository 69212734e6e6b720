package auth

import (
	"sync"

	"github.com/google/uuid"
)

// Most requests carry an access token, and reading its user and session cost every one of them
// a round trip before its own statement. The principal of a token is kept per user and session
// once read, and forgotten when PostgreSQL announces a change of the user or of its sessions
// (channel auth_users, migration 143, heard by catalog.Service.Watch) or when this server makes
// one (Forget, after the commit). As with kept dataset records, a principal is kept only while
// the listener is up and when nothing was announced during its read: logout, a revoked session,
// deactivation, a role or password change reach every replica as fast as the announcement
// (milliseconds), and a server that cannot hear announcements reads every time.

// AnnouncedUsers is the channel of changes of users and their sessions; its payload is the
// user's id.
const AnnouncedUsers = "auth_users"

// maxPrincipals bounds the principals kept; past it the set starts again empty.
const maxPrincipals = 10000

type keptPrincipal struct {
	p       Principal
	version int32 // the user's token version when read
}

type principals struct {
	mu    sync.Mutex
	live  bool
	epoch uint64
	n     int
	users map[uuid.UUID]map[uuid.UUID]keptPrincipal // user, then session
}

// get answers the kept principal of a session, and the epoch a read must be put back with.
func (c *principals) get(user, session uuid.UUID) (keptPrincipal, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.users[user][session]
	return k, c.epoch, ok
}

// put keeps k, read while the announcements numbered epoch: only when none arrived since and the
// listener is up.
func (c *principals) put(k keptPrincipal, epoch uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.live || c.epoch != epoch {
		return
	}
	if c.users == nil || c.n >= maxPrincipals {
		c.users, c.n = map[uuid.UUID]map[uuid.UUID]keptPrincipal{}, 0
	}
	sessions := c.users[k.p.UserID]
	if sessions == nil {
		sessions = map[uuid.UUID]keptPrincipal{}
		c.users[k.p.UserID] = sessions
	}
	if _, ok := sessions[k.p.Session]; !ok {
		c.n++
	}
	sessions[k.p.Session] = k
}

// heard drops what is kept of user (every user for uuid.Nil) after an announcement, and notes
// whether the listener is live, in one step so that no read is kept between the two.
func (c *principals) heard(user uuid.UUID, live bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live = live
	c.drop(user)
}

// forget drops what is kept of user (every user for uuid.Nil).
func (c *principals) forget(user uuid.UUID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drop(user)
}

func (c *principals) drop(user uuid.UUID) {
	c.epoch++
	if user == uuid.Nil {
		c.users, c.n = nil, 0
		return
	}
	c.n -= len(c.users[user])
	delete(c.users, user)
}

// Announced hears PostgreSQL's announcements (catalog.Service.Announced): a change of a user or
// its sessions, or the listener going up or down ("" channel), after which nothing kept can be
// trusted.
func (s *Service) Announced(channel, payload string, live bool) {
	switch channel {
	case "":
		s.kept.heard(uuid.Nil, live)
	case AnnouncedUsers:
		id, err := uuid.Parse(payload)
		if err != nil {
			id = uuid.Nil
		}
		s.kept.heard(id, true)
	}
}

// Forget drops what this server keeps of user's principals at once, without waiting for the
// announcement of the change: called after a change of the user or its sessions commits.
func (s *Service) Forget(user uuid.UUID) { s.kept.forget(user) }
