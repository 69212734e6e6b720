package accounts

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"meridian/internal/apperr"
	"meridian/internal/audit"
	"meridian/internal/auth"
	"meridian/store"
)

// Service manages user accounts for admins: create, read, update, approve, deactivate.
type Service struct {
	Pool *pgxpool.Pool
	Q    *store.Queries
	Log  *slog.Logger
	// Forget drops what this server keeps of a user's sessions once a change of the user commits
	// (auth.Service.Forget); other servers hear of it from PostgreSQL.
	Forget func(user uuid.UUID)
}

// forget passes a committed change of user on to Forget.
func (s *Service) forget(user uuid.UUID) {
	if s.Forget != nil {
		s.Forget(user)
	}
}

// NewUser is an account an admin creates.
type NewUser struct {
	Username, Email, Password, Role string
	EmailVerified                   bool
}

// Create stores a new active user. A password, when given, must meet the policy.
func (s *Service) Create(ctx context.Context, nu NewUser, actor auth.Principal, c auth.Client) (User, error) {
	if nu.Email == "" {
		return User{}, apperr.Unprocessable("email: an account needs an email address")
	}
	if nu.Role == "" {
		nu.Role = auth.RoleViewer
	}
	var hash *string
	if nu.Password != "" {
		h, err := hashChecked(nu.Password)
		if err != nil {
			return User{}, err
		}
		hash = &h
	}
	u, err := s.Q.CreateUser(ctx, store.CreateUserParams{Username: nu.Username, Email: nu.Email, PasswordHash: hash,
		Role: nu.Role, Status: "active", EmailVerified: nu.EmailVerified})
	if err != nil {
		return User{}, uniqueConflict(err)
	}
	audit.Record(ctx, s.Q, s.Log, audit.Entry{ActorID: actor.UserID, ActorDisplay: actor.Username, Action: "user.create",
		ResourceType: "user", ResourceID: u.ID.String(), IP: c.IP, UA: c.UserAgent,
		Detail: map[string]any{"username": u.Username, "role": u.Role}})
	return userOf(u), nil
}

// Get returns one user or 404.
func (s *Service) Get(ctx context.Context, id uuid.UUID) (User, error) {
	u, err := s.Q.GetUserByID(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return User{}, apperr.NotFound("user %s not found", id)
	}
	return userOf(u), err
}

// Change is a partial update of an account; nil fields stay as they are.
type Change struct {
	Username, Email, Role, Status, Password *string
	EmailVerified                           *bool
}

// Update applies ch. A role, status or password change invalidates the user's tokens and keys and
// ends their sessions; the last active admin cannot demote or deactivate themselves away. It is
// audited as user.update.
func (s *Service) Update(ctx context.Context, id uuid.UUID, ch Change, actor auth.Principal, c auth.Client) (User, error) {
	return s.update(ctx, id, ch, actor, c, "user.update")
}

// update applies ch and audits it as action, with what changed.
func (s *Service) update(ctx context.Context, id uuid.UUID, ch Change, actor auth.Principal, c auth.Client, action string) (User, error) {
	var hash *string
	if ch.Password != nil {
		h, err := hashChecked(*ch.Password)
		if err != nil {
			return User{}, err
		}
		hash = &h
	}
	var out store.CatalogUser
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := s.Q.WithTx(tx)
		// Serialize admin changes so two admins cannot demote each other to zero admins.
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext('meridian.admin_changes'))"); err != nil {
			return err
		}
		before, err := q.GetUserByID(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			return apperr.NotFound("user %s not found", id)
		}
		if err != nil {
			return err
		}
		out, err = q.UpdateUser(ctx, store.UpdateUserParams{ID: id, Username: ch.Username, Email: ch.Email, Role: ch.Role,
			Status: ch.Status, EmailVerified: ch.EmailVerified, PasswordHash: hash})
		if err != nil {
			return uniqueConflict(err)
		}
		if before.Role == auth.RoleAdmin && before.Status == "active" && (out.Role != auth.RoleAdmin || out.Status != "active") {
			n, err := q.CountActiveAdmins(ctx)
			if err != nil {
				return err
			}
			if n == 0 {
				return apperr.Conflict("this is the last active admin; make another user admin first")
			}
		}
		if out.TokenVersion != before.TokenVersion {
			if err := q.RevokeUserRefreshTokens(ctx, id); err != nil {
				return err
			}
		}
		audit.Record(ctx, q, s.Log, audit.Entry{ActorID: actor.UserID, ActorDisplay: actor.Username, Action: action,
			ResourceType: "user", ResourceID: id.String(), IP: c.IP, UA: c.UserAgent, Detail: changes(before, out, ch.Password != nil)})
		return nil
	})
	s.forget(id)
	return userOf(out), err
}

// changes describes what an update changed, {field: {from, to}}; a password only as changed.
func changes(before, after store.CatalogUser, password bool) map[string]any {
	out := map[string]any{"user": after.Username}
	diff := func(field string, from, to any) {
		if from != to {
			out[field] = map[string]any{"from": from, "to": to}
		}
	}
	diff("role", before.Role, after.Role)
	diff("status", before.Status, after.Status)
	diff("email", before.Email, after.Email)
	diff("email_verified", before.EmailVerified, after.EmailVerified)
	diff("username", before.Username, after.Username)
	if password {
		out["password_changed"] = true
	}
	return out
}

func hashChecked(password string) (string, error) {
	if err := auth.CheckPasswordPolicy(password); err != nil {
		return "", apperr.Unprocessable("%s", err.Error())
	}
	return auth.HashPassword(password)
}

// uniqueField names the column ("username" or "email") whose unique index err violates, or "".
func uniqueField(err error) string {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" {
		return ""
	}
	if strings.Contains(pgErr.ConstraintName, "email") {
		return "email"
	}
	return "username"
}

// uniqueConflict turns a unique violation on username or email into a 409 that names the field.
func uniqueConflict(err error) error {
	if field := uniqueField(err); field != "" {
		return apperr.Conflict("a user with this %s already exists", field)
	}
	return err
}

// transitions name the audit action of each status move: approve, reject, deactivate.
var transitions = map[string]string{"active": "user.approve", "suspended": "user.reject", "deactivated": "user.deactivate"}

// Transition moves a user's status for approve, reject and deactivate. from lists the statuses the
// move starts from; any other current status answers 409.
func (s *Service) Transition(ctx context.Context, id uuid.UUID, to string, from []string, actor auth.Principal, c auth.Client) (User, error) {
	u, err := s.Get(ctx, id)
	if err != nil {
		return u, err
	}
	allowed := false
	for _, f := range from {
		allowed = allowed || u.Status == f
	}
	if !allowed {
		return u, apperr.Conflict("user is %s; this action applies to %s users", u.Status, strings.Join(from, " or "))
	}
	if id == actor.UserID && to != "active" {
		return u, apperr.Conflict("you cannot change your own account's status")
	}
	return s.update(ctx, id, Change{Status: &to}, actor, c, cmp.Or(transitions[to], "user.update"))
}

// Delete removes a user and, through foreign keys, their keys, sessions and provider links.
// transferTo, when set, must name another existing user (content ownership moves there as
// capabilities that own content are added).
func (s *Service) Delete(ctx context.Context, id uuid.UUID, transferTo *uuid.UUID, actor auth.Principal, c auth.Client) error {
	if id == actor.UserID {
		return apperr.Conflict("you cannot delete your own account")
	}
	if transferTo != nil {
		if *transferTo == id {
			return apperr.Unprocessable("transfer_to must name another user")
		}
		if _, err := s.Get(ctx, *transferTo); err != nil {
			return err
		}
	}
	defer s.forget(id)
	return pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := s.Q.WithTx(tx)
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext('meridian.admin_changes'))"); err != nil {
			return err
		}
		u, err := q.GetUserByID(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			return apperr.NotFound("user %s not found", id)
		}
		if err != nil {
			return err
		}
		if _, err := q.DeleteUser(ctx, id); err != nil {
			return err
		}
		if u.Role == auth.RoleAdmin && u.Status == "active" {
			if n, err := q.CountActiveAdmins(ctx); err != nil || n == 0 {
				if err == nil {
					err = apperr.Conflict("this is the last active admin")
				}
				return err
			}
		}
		audit.Record(ctx, q, s.Log, audit.Entry{ActorID: actor.UserID, ActorDisplay: actor.Username, Action: "user.delete",
			ResourceType: "user", ResourceID: id.String(), IP: c.IP, UA: c.UserAgent, Detail: map[string]any{"username": u.Username}})
		return nil
	})
}
