// Package accounts manages user accounts: the first admin, registration, approval and profiles.
package accounts

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"meridian/internal/auth"
	"meridian/store"
)

// EnsureAdmin creates the configured admin when no active admin exists yet. It runs in one
// transaction holding an advisory lock, so replicas starting together create one admin, not several.
// It reports whether it created the account.
func EnsureAdmin(ctx context.Context, pool *pgxpool.Pool, username, email, password string) (bool, error) {
	if username == "" {
		return false, nil
	}
	if err := auth.CheckPasswordPolicy(password); err != nil {
		return false, fmt.Errorf("ADMIN_PASSWORD: %w", err)
	}
	if email == "" {
		email = username + "@localhost.localdomain"
	}
	created := false
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext('meridian.ensure_admin'))"); err != nil {
			return err
		}
		q := store.New(tx)
		n, err := q.CountActiveAdmins(ctx)
		if err != nil || n > 0 {
			return err
		}
		hash, err := auth.HashPassword(password)
		if err != nil {
			return err
		}
		u, err := q.CreateUser(ctx, store.CreateUserParams{
			Username: username, Email: email, PasswordHash: &hash,
			Role: "admin", Status: "active", EmailVerified: true,
		})
		if err != nil {
			return fmt.Errorf("create admin %q: %w", username, err)
		}
		detail, _ := json.Marshal(map[string]string{"username": u.Username})
		created = true
		return q.RecordAudit(ctx, store.RecordAuditParams{
			ActorDisplay: "system", Action: "user.bootstrap_admin", ResourceType: "user",
			ResourceID: u.ID.String(), Outcome: "success", Detail: detail,
		})
	})
	return created, err
}
