package ai

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/store"
)

// The daily token quota (setting max_ai_tokens_per_user_per_day): a user who has spent it gets
// 429 until the next UTC day, before anything is sent. Each reply is also bounded by what is
// left, so one long answer cannot overrun the quota by more than a reply's worth.

// today is the quota's day.
func today(now time.Time) time.Time {
	y, m, d := now.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// allowance is how many tokens p may still spend today (0 with no cap: then unbounded), or 429
// when none are left.
func (s *Service) allowance(ctx context.Context, p auth.Principal, st Setup) (int64, error) {
	limit := st.MaxTokensPerUserPerDay
	if limit <= 0 || p.Anonymous() {
		return 0, nil
	}
	now := time.Now()
	used, err := s.Q.AITokensOn(ctx, store.AITokensOnParams{UserID: p.UserID, Day: day(now)})
	if err != nil {
		return 0, err
	}
	if used >= limit {
		return 0, &apperr.Error{Kind: apperr.KindRateLimited, Title: "AI quota reached",
			RetryAfter: today(now).Add(24 * time.Hour).Sub(now),
			Detail:     "you have used your daily AI allowance of " + itoa(limit) + " tokens (setting max_ai_tokens_per_user_per_day); it renews at 00:00 UTC"}
	}
	return limit - used, nil
}

// spend adds a call's tokens to p's day. The answer was given whatever this does: a failure is
// logged, not passed on.
func (s *Service) spend(ctx context.Context, p auth.Principal, tokens int64) {
	if p.Anonymous() || tokens <= 0 {
		return
	}
	if _, err := s.Q.AddAITokens(context.WithoutCancel(ctx), store.AddAITokensParams{UserID: p.UserID, Day: day(time.Now()), Tokens: tokens}); err != nil {
		s.Log.Warn("ai: counting tokens failed", "user", p.UserID, "tokens", tokens, "err", err)
	}
}

// day is the quota's day as the database takes it.
func day(now time.Time) pgtype.Date { return pgtype.Date{Time: today(now), Valid: true} }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
