package handlers

import (
	"slices"

	"meridian/internal/config"
	"meridian/internal/web"
)

// operationLimiter is operation op's limit of n requests a minute per client address: counted in
// the buckets every replica shares for the operations of RATE_LIMITS_SHARED (sign-in and account
// operations, whose limit stops guessing only if it holds across replicas), else in this
// process's own (a limit that protects the replica's own resources).
func (s *Server) operationLimiter(cfg config.Config, op string, n int) web.Limiter {
	if s.sharedLimit != nil && slices.Contains(cfg.SharedRateLimits, op) {
		return s.sharedLimit(op, n)
	}
	return web.PerMinute(n)
}
