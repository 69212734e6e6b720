package auth

import (
	"testing"

	"github.com/google/uuid"
)

// TestKeptPrincipals: a principal is kept only when read while the listener was up and nothing
// was announced meanwhile, and an announcement of its user (or the listener going down) drops it.
func TestKeptPrincipals(t *testing.T) {
	alice, bob := uuid.New(), uuid.New()
	kept := func(user uuid.UUID) keptPrincipal {
		return keptPrincipal{p: Principal{UserID: user, Session: user, Role: RoleViewer}, version: 1}
	}
	for _, c := range []struct {
		name  string
		steps func(s *Service)
		alice bool
		bob   bool
	}{
		{"listener never up", func(s *Service) { s.keep(kept(alice)); s.keep(kept(bob)) }, false, false},
		{"listener up", func(s *Service) { s.Announced("", "", true); s.keep(kept(alice)); s.keep(kept(bob)) }, true, true},
		{"alice announced", func(s *Service) {
			s.Announced("", "", true)
			s.keep(kept(alice))
			s.keep(kept(bob))
			s.Announced(AnnouncedUsers, alice.String(), true)
		}, false, true},
		{"a dataset announced", func(s *Service) {
			s.Announced("", "", true)
			s.keep(kept(alice))
			s.Announced("catalog_datasets", alice.String(), true)
		}, true, false},
		{"an unreadable payload drops everyone", func(s *Service) {
			s.Announced("", "", true)
			s.keep(kept(alice))
			s.keep(kept(bob))
			s.Announced(AnnouncedUsers, "?", true)
		}, false, false},
		{"forgotten by this server", func(s *Service) { s.Announced("", "", true); s.keep(kept(alice)); s.Forget(alice) }, false, false},
		{"listener down", func(s *Service) {
			s.Announced("", "", true)
			s.keep(kept(alice))
			s.Announced("", "", false)
			s.keep(kept(bob))
		}, false, false},
		{"announced during the read", func(s *Service) {
			s.Announced("", "", true)
			_, epoch, _ := s.kept.get(alice, alice)
			s.Announced(AnnouncedUsers, bob.String(), true)
			s.kept.put(kept(alice), epoch)
		}, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &Service{}
			c.steps(s)
			for user, want := range map[uuid.UUID]bool{alice: c.alice, bob: c.bob} {
				if _, _, ok := s.kept.get(user, user); ok != want {
					t.Errorf("kept %v, want %v", ok, want)
				}
			}
		})
	}
}

// keep is a read with no announcement during it.
func (s *Service) keep(k keptPrincipal) {
	_, epoch, _ := s.kept.get(k.p.UserID, k.p.Session)
	s.kept.put(k, epoch)
}
