package auth

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"meridian/internal/apperr"
	"meridian/internal/audit"
	"meridian/internal/settings"
	"meridian/store"
)

// Service resolves credentials and manages sessions: login, refresh rotation, logout.
type Service struct {
	Pool       *pgxpool.Pool
	Q          *store.Queries
	Signer     *Signer
	RefreshTTL time.Duration
	Grace      time.Duration // a rotated refresh token still works once within this window
	Log        *slog.Logger

	kept principals // bearer principals, forgotten on every announced change (principals.go)
}

// Client describes where a request came from, for sessions and the audit trail.
type Client struct{ IP, UserAgent string }

// TokenPair is the result of a sign-in or a refresh.
type TokenPair struct {
	AccessToken  string
	RefreshToken string
	ExpiresIn    int
	UserID       uuid.UUID
}

// errInvalidLogin is the one answer for an unknown user and a wrong password, so the response does
// not tell which usernames exist. Clients translate this exact detail (client-semantics.md).
var errInvalidLogin = apperr.Unauthorized("Incorrect username or password")

// errAwaitingApproval answers a pending account (awaiting email verification or an admin's
// approval); clients translate this exact detail.
var errAwaitingApproval = apperr.Forbidden("Your account is awaiting approval")

// Audit actions of sign-ins (client-semantics.md, Audit).
const (
	actionLoginSuccess = "user.login.success"
	actionLoginFailure = "user.login.failure"
)

// errSessionInvalid is the one answer for every refresh token that cannot be used.
var errSessionInvalid = apperr.Unauthorized("refresh token is invalid, expired or revoked; sign in again")

// dummyHash is verified against when the user does not exist, so both paths cost one argon2id run.
var dummyHash, _ = HashPassword("meridian-timing-equaliser-not-a-password")

// Login checks a username (or email) and password and opens a session.
func (s *Service) Login(ctx context.Context, login, password string, c Client) (TokenPair, error) {
	u, err := s.Q.GetUserByLogin(ctx, login)
	if errors.Is(err, pgx.ErrNoRows) {
		_, _ = VerifyPassword(dummyHash, password)
		s.audit(ctx, audit.Entry{ActorDisplay: login, Action: actionLoginFailure, Failed: true, IP: c.IP, UA: c.UserAgent,
			ResourceType: "user", Detail: map[string]any{"reason": "invalid_credentials"}})
		return TokenPair{}, errInvalidLogin
	}
	if err != nil {
		return TokenPair{}, err
	}
	hash := dummyHash
	if u.PasswordHash != nil {
		hash = *u.PasswordHash
	}
	ok, err := VerifyPassword(hash, password)
	if err != nil || !ok || u.PasswordHash == nil {
		s.audit(ctx, audit.Entry{ActorID: u.ID, ActorDisplay: u.Username, Action: actionLoginFailure, Failed: true,
			IP: c.IP, UA: c.UserAgent, ResourceType: "user", ResourceID: u.ID.String(), Detail: map[string]any{"reason": "invalid_credentials"}})
		return TokenPair{}, errInvalidLogin
	}
	// The password was right, so saying why it may not sign in does not help anyone guess accounts.
	refusal, reason := notSignedIn(u.Status), "status_"+u.Status
	if refusal == nil && u.Role != RoleAdmin {
		// Admins keep password sign-in, so that a broken identity provider cannot lock everyone out.
		a, err := settings.Reader{Q: s.Q}.Auth(ctx)
		if err != nil {
			return TokenPair{}, err
		}
		if !a.LocalLoginEnabled {
			refusal, reason = apperr.Forbidden("password sign-in is switched off on this server; sign in with your identity provider"), "password_login_disabled"
		}
	}
	if refusal != nil {
		s.audit(ctx, audit.Entry{ActorID: u.ID, ActorDisplay: u.Username, Action: actionLoginFailure, Failed: true,
			IP: c.IP, UA: c.UserAgent, ResourceType: "user", ResourceID: u.ID.String(), Detail: map[string]any{"reason": reason}})
		return TokenPair{}, refusal
	}
	pair, err := s.openSession(ctx, u, uuid.New(), c)
	if err != nil {
		return TokenPair{}, err
	}
	_ = s.Q.RecordUserLogin(ctx, u.ID)
	s.audit(ctx, audit.Entry{ActorID: u.ID, ActorDisplay: u.Username, Action: actionLoginSuccess, IP: c.IP, UA: c.UserAgent,
		ResourceType: "user", ResourceID: u.ID.String(), Detail: map[string]any{"method": "password"}})
	return pair, nil
}

// IssueFor opens a session for a user resolved elsewhere (OAuth sign-in).
func (s *Service) IssueFor(ctx context.Context, userID uuid.UUID, c Client) (TokenPair, error) {
	u, err := s.Q.GetUserByID(ctx, userID)
	if err != nil {
		return TokenPair{}, err
	}
	if err := notSignedIn(u.Status); err != nil {
		return TokenPair{}, err
	}
	_ = s.Q.RecordUserLogin(ctx, u.ID)
	return s.openSession(ctx, u, uuid.New(), c)
}

// notSignedIn is the refusal of an account whose status keeps it from signing in, nil for an
// active one.
func notSignedIn(status string) error {
	switch status {
	case "active":
		return nil
	case "pending":
		return errAwaitingApproval
	case "suspended":
		return apperr.Forbidden("account is suspended and cannot sign in")
	default:
		return apperr.Forbidden("account is deactivated and cannot sign in")
	}
}

func (s *Service) openSession(ctx context.Context, u store.CatalogUser, family uuid.UUID, c Client) (TokenPair, error) {
	access, err := s.Signer.Issue(u.ID, u.Role, u.TokenVersion, family)
	if err != nil {
		return TokenPair{}, err
	}
	refresh := NewOpaqueToken()
	if _, err := s.Q.CreateRefreshToken(ctx, store.CreateRefreshTokenParams{
		FamilyID: family, UserID: u.ID, TokenHash: HashToken(refresh),
		ExpiresAt: time.Now().Add(s.RefreshTTL), Ip: c.IP, UserAgent: truncate(c.UserAgent, 400),
	}); err != nil {
		return TokenPair{}, err
	}
	return TokenPair{AccessToken: access, RefreshToken: refresh, ExpiresIn: int(s.Signer.TTL().Seconds()), UserID: u.ID}, nil
}

// Refresh exchanges a refresh token for a new pair, rotating it. Presenting a rotated token again
// outside the grace window is treated as theft: the whole family (every token of that sign-in)
// is revoked.
func (s *Service) Refresh(ctx context.Context, token string, c Client) (TokenPair, error) {
	rt, err := s.Q.GetRefreshTokenByHash(ctx, HashToken(token))
	if errors.Is(err, pgx.ErrNoRows) {
		return TokenPair{}, errSessionInvalid
	}
	if err != nil {
		return TokenPair{}, err
	}
	if rt.RevokedAt != nil || time.Now().After(rt.ExpiresAt) {
		return TokenPair{}, errSessionInvalid
	}
	u, err := s.Q.GetUserByID(ctx, rt.UserID)
	if err != nil {
		return TokenPair{}, err
	}
	if u.Status != "active" {
		_ = s.Q.RevokeRefreshFamily(ctx, rt.FamilyID)
		s.Forget(u.ID)
		return TokenPair{}, errSessionInvalid
	}
	n, err := s.Q.RotateRefreshToken(ctx, rt.ID)
	if err != nil {
		return TokenPair{}, err
	}
	if n == 0 {
		n, err = s.Q.UseRefreshTokenGrace(ctx, store.UseRefreshTokenGraceParams{ID: rt.ID, GraceSeconds: s.Grace.Seconds()})
		if err != nil {
			return TokenPair{}, err
		}
		if n == 0 {
			_ = s.Q.RevokeRefreshFamily(ctx, rt.FamilyID)
			s.Forget(u.ID)
			s.audit(ctx, audit.Entry{ActorID: u.ID, ActorDisplay: u.Username, Action: "auth.refresh_reuse", Failed: true,
				IP: c.IP, UA: c.UserAgent, ResourceType: "session", ResourceID: rt.FamilyID.String()})
			return TokenPair{}, errSessionInvalid
		}
	}
	return s.openSession(ctx, u, rt.FamilyID, c)
}

// Logout revokes the session a refresh token belongs to, or with all every session of its user,
// and audits it as user.logout. It reports whether the token resolved.
func (s *Service) Logout(ctx context.Context, token string, all bool, c Client) (bool, error) {
	rt, err := s.Q.GetRefreshTokenByHash(ctx, HashToken(token))
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if rt.RevokedAt != nil || time.Now().After(rt.ExpiresAt) {
		return false, nil
	}
	if err := s.revoke(ctx, rt.UserID, rt.FamilyID, all); err != nil {
		return false, err
	}
	// The session is over either way; a user that cannot be read only costs the audit its name.
	u, _ := s.Q.GetUserByID(ctx, rt.UserID)
	s.auditLogout(ctx, Principal{UserID: rt.UserID, Username: u.Username}, rt.FamilyID, all, c)
	return true, nil
}

// EndSession revokes the session of p (the one its live access token names), or with all every
// session of p's user, and audits it as user.logout.
func (s *Service) EndSession(ctx context.Context, p Principal, all bool, c Client) error {
	if err := s.revoke(ctx, p.UserID, p.Session, all); err != nil {
		return err
	}
	s.auditLogout(ctx, p, p.Session, all, c)
	return nil
}

// revoke ends one session (a refresh-token family) or every session of user. Access tokens name
// their session and die with it (AuthenticateBearer); API keys are no session and stay (spec
// section 5, rule 6).
func (s *Service) revoke(ctx context.Context, user, session uuid.UUID, all bool) error {
	defer s.Forget(user)
	if all {
		return s.Q.RevokeUserRefreshTokens(ctx, user)
	}
	return s.Q.RevokeRefreshFamily(ctx, session)
}

func (s *Service) auditLogout(ctx context.Context, p Principal, session uuid.UUID, all bool, c Client) {
	s.audit(ctx, audit.Entry{ActorID: p.UserID, ActorDisplay: p.Username, Action: "user.logout", ResourceType: "user",
		ResourceID: p.UserID.String(), IP: c.IP, UA: c.UserAgent, Detail: map[string]any{"session": session.String(), "all_sessions": all}})
}

// errBadCredential is the one answer for every API key or access token that does not resolve.
var errBadCredential = apperr.Unauthorized("credential is invalid, expired or revoked")

// AuthenticateBearer resolves an access token. The user row and the token's session are read in
// one query, or taken from what was kept of them (principals.go), so that logout, a revoked
// session, deactivation, role and password changes take effect on every replica as soon as
// PostgreSQL announces them, not when the token expires.
func (s *Service) AuthenticateBearer(ctx context.Context, token string) (Principal, error) {
	id, claims, err := s.Signer.Verify(token)
	if err != nil {
		return Principal{}, errBadCredential
	}
	session, err := uuid.Parse(claims.Session)
	if err != nil {
		return Principal{}, errBadCredential // every token we issue names its session
	}
	k, epoch, ok := s.kept.get(id, session)
	if ok && k.version == claims.Version {
		return k.p, nil
	}
	r, err := s.Q.GetUserForAccessToken(ctx, store.GetUserForAccessTokenParams{ID: id, SessionID: session})
	if errors.Is(err, pgx.ErrNoRows) {
		return Principal{}, errBadCredential
	}
	if err != nil {
		return Principal{}, err
	}
	u := r.CatalogUser
	if u.Status != "active" || u.TokenVersion != claims.Version || !r.SessionOpen {
		return Principal{}, errBadCredential
	}
	p := Principal{UserID: u.ID, Username: u.Username, Role: u.Role, Via: ViaBearer, Session: session}
	s.kept.put(keptPrincipal{p: p, version: u.TokenVersion}, epoch)
	return p, nil
}

// AuthenticateKey resolves an API key secret.
func (s *Service) AuthenticateKey(ctx context.Context, key string) (Principal, error) {
	if len(key) < 16 || len(key) > 256 {
		return Principal{}, errBadCredential
	}
	k, err := s.Q.GetAPIKeyCredential(ctx, HashToken(key))
	if errors.Is(err, pgx.ErrNoRows) {
		return Principal{}, errBadCredential
	}
	if err != nil {
		return Principal{}, err
	}
	if k.RevokedAt != nil || (k.ExpiresAt != nil && time.Now().After(*k.ExpiresAt)) ||
		k.Status != "active" || k.KeyVersion != k.UserVersion {
		return Principal{}, errBadCredential
	}
	return Principal{UserID: k.UserID, Username: k.Username, Role: k.Role, Via: ViaAPIKey, KeyID: k.ID, KeyScope: k.Scope}, nil
}

// ChangePassword checks the current password, applies the policy and stores the new hash. The
// version bump inside SetUserPassword invalidates access tokens and API keys; sessions are revoked.
func (s *Service) ChangePassword(ctx context.Context, userID uuid.UUID, current, next string, c Client) error {
	u, err := s.Q.GetUserByID(ctx, userID)
	if err != nil {
		return err
	}
	if u.PasswordHash == nil {
		return apperr.Conflict("this account signs in through an identity provider and has no local password")
	}
	if ok, err := VerifyPassword(*u.PasswordHash, current); err != nil || !ok {
		s.audit(ctx, audit.Entry{ActorID: u.ID, ActorDisplay: u.Username, Action: "user.change_password", Failed: true, IP: c.IP, UA: c.UserAgent,
			ResourceType: "user", ResourceID: u.ID.String()})
		return apperr.Invalid("current password is not correct")
	}
	if err := CheckPasswordPolicy(next); err != nil {
		return apperr.Unprocessable("%s", err.Error())
	}
	hash, err := HashPassword(next)
	if err != nil {
		return err
	}
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := s.Q.WithTx(tx)
		if _, err := q.SetUserPassword(ctx, store.SetUserPasswordParams{ID: u.ID, PasswordHash: &hash}); err != nil {
			return err
		}
		return q.RevokeUserRefreshTokens(ctx, u.ID)
	})
	s.Forget(u.ID)
	if err != nil {
		return err
	}
	s.audit(ctx, audit.Entry{ActorID: u.ID, ActorDisplay: u.Username, Action: "user.change_password", IP: c.IP, UA: c.UserAgent,
		ResourceType: "user", ResourceID: u.ID.String()})
	return nil
}

func (s *Service) audit(ctx context.Context, e audit.Entry) { audit.Record(ctx, s.Q, s.Log, e) }

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
