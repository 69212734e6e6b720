package accounts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"meridian/internal/apperr"
	"meridian/internal/audit"
	"meridian/internal/auth"
	"meridian/internal/mail"
	"meridian/internal/settings"
	"meridian/store"
)

// Registration is self-service sign-up: open, approval-gated or closed, with email verification
// when mail is configured.
type Registration struct {
	Pool    *pgxpool.Pool
	Q       *store.Queries
	Log     *slog.Logger
	Mail    *mail.Sender
	BaseURL string // links in mails point at {BaseURL}/verify-email?token=...
}

// Next steps a registrant is told about.
const (
	StepVerifyEmail   = "verify_email"
	StepAwaitApproval = "await_approval"
)

// VerificationTTL is how long a verification link works.
const VerificationTTL = 24 * time.Hour

// Register creates a pending (or, in open mode without verification, active) viewer account and
// returns the next step, "" when the account is usable at once. A registered email answers like
// a success and mails its owner instead, so registration cannot probe which addresses exist.
func (r *Registration) Register(ctx context.Context, username, email, password string, c auth.Client) (string, error) {
	cfg, err := r.config(ctx)
	if err != nil {
		return "", err
	}
	if cfg.RegistrationMode == "closed" {
		return "", apperr.Forbidden("self-registration is closed; ask an administrator for an account")
	}
	if email == "" {
		// Verification, approval notices and password resets all go by mail.
		return "", apperr.Unprocessable("email: an account needs an email address")
	}
	if !cfg.EmailAllowed(email) {
		return "", apperr.Unprocessable("email: registration is limited to addresses at %s", strings.Join(cfg.AllowedEmailDomains, ", "))
	}
	if err := auth.CheckPasswordPolicy(password); err != nil {
		return "", apperr.Unprocessable("%s", err.Error())
	}
	verify := cfg.EmailVerificationRequired
	approval := cfg.RegistrationMode == "approval"
	next := ""
	switch {
	case verify:
		next = StepVerifyEmail
	case approval:
		next = StepAwaitApproval
	}
	if existing, err := r.Q.GetUserByEmail(ctx, email); err == nil {
		r.notifyExisting(ctx, existing)
		return next, nil
	} else if !errors.Is(err, pgx.ErrNoRows) {
		return "", err
	}
	hash, err := auth.HashPassword(password)
	if err != nil {
		return "", err
	}
	status := "active"
	if verify || approval {
		status = "pending"
	}
	u, err := r.Q.CreateUser(ctx, store.CreateUserParams{Username: username, Email: email, PasswordHash: &hash,
		Role: auth.RoleViewer, Status: status})
	if uniqueField(err) == "email" {
		return next, nil // a concurrent registration of the same address: same answer
	}
	if err != nil {
		return "", uniqueConflict(err)
	}
	audit.Record(ctx, r.Q, r.Log, audit.Entry{ActorID: u.ID, ActorDisplay: u.Username, Action: "user.register",
		ResourceType: "user", ResourceID: u.ID.String(), IP: c.IP, UA: c.UserAgent, Detail: map[string]any{"status": status}})
	if verify {
		if err := r.sendVerification(ctx, u); err != nil {
			return "", err
		}
	}
	return next, nil
}

// Verify consumes a verification token and returns the account status afterwards.
func (r *Registration) Verify(ctx context.Context, token string) (string, error) {
	cfg, err := r.config(ctx)
	if err != nil {
		return "", err
	}
	userID, err := r.Q.UseEmailVerification(ctx, auth.HashToken(token))
	if errors.Is(err, pgx.ErrNoRows) {
		return "", apperr.Invalid("the verification link is unknown, used or expired; ask for a new one")
	}
	if err != nil {
		return "", err
	}
	u, err := r.Q.MarkEmailVerified(ctx, store.MarkEmailVerifiedParams{ID: userID, NeedsApproval: cfg.RegistrationMode == "approval"})
	if err != nil {
		return "", err
	}
	return u.Status, nil
}

// Resend mails a fresh link when email belongs to an unverified account, and is silent otherwise.
func (r *Registration) Resend(ctx context.Context, email string) error {
	u, err := r.Q.GetUserByEmail(ctx, email)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	if u.EmailVerified || u.Status != "pending" || !r.Mail.Enabled() {
		return nil
	}
	return r.sendVerification(ctx, u)
}

// Config is the registration setup /auth/config/ shows. Email verification is only required
// when mail can actually be sent.
func (r *Registration) config(ctx context.Context) (settings.Auth, error) {
	a, err := settings.Reader{Q: r.Q}.Auth(ctx)
	a.EmailVerificationRequired = a.EmailVerificationRequired && r.Mail.Enabled()
	return a, err
}

// Config is exported for the auth configuration endpoint.
func (r *Registration) Config(ctx context.Context) (settings.Auth, error) { return r.config(ctx) }

func (r *Registration) sendVerification(ctx context.Context, u store.CatalogUser) error {
	token := auth.NewOpaqueToken()
	if err := r.Q.CreateEmailVerification(ctx, store.CreateEmailVerificationParams{UserID: u.ID,
		TokenHash: auth.HashToken(token), ExpiresAt: time.Now().Add(VerificationTTL)}); err != nil {
		return err
	}
	body := fmt.Sprintf("Hello %s,\n\nconfirm your email address for Meridian by opening this link within 24 hours:\n\n%s/verify-email?token=%s\n\nVerification code: %s\n\nIf you did not register, ignore this message.\n",
		u.Username, r.BaseURL, token, token)
	if err := r.Mail.Send(ctx, u.Email, "Confirm your email address", body); err != nil {
		return &apperr.Error{Kind: apperr.KindUnavailable, Err: err, RetryAfter: time.Minute,
			Detail: "the verification mail could not be sent; the account exists: ask for a new link with /auth/resend-verification/"}
	}
	return nil
}

// notifyExisting tells the owner of an address that someone tried to register it. Failures are
// only logged: the caller must get the same answer either way.
func (r *Registration) notifyExisting(ctx context.Context, u store.CatalogUser) {
	if !r.Mail.Enabled() {
		return
	}
	body := fmt.Sprintf("Hello %s,\n\nsomeone tried to register a new Meridian account with this email address, which already has an account (%s). If it was you, sign in or reset your password; otherwise ignore this message.\n",
		u.Username, u.Username)
	if err := r.Mail.Send(ctx, u.Email, "Registration attempt for your address", body); err != nil {
		r.Log.Warn("registration notice not sent", "err", err)
	}
}
