package handlers

// Operations of the Health tag.

import (
	"context"

	"meridian/gen"
	"meridian/internal/config"
	"meridian/internal/health"
)

// healthChecker checks the providers the service depends on.
type healthChecker interface {
	Check(ctx context.Context) health.Report
}

// Health: Health (GET /health). 200 when every required provider is up, else 503 with the same
// document, so monitors can read the body whatever the status.
func (s *Server) Health(ctx context.Context, request gen.HealthRequestObject) (gen.HealthResponseObject, error) {
	r := s.health.Check(ctx)
	report := gen.HealthReport{
		Status:    gen.HealthReportStatusHealthy,
		Version:   config.Version,
		Build:     config.Build,
		CheckedAt: &r.CheckedAt,
		Providers: map[string]gen.HealthProviderStatus{},
	}
	for name, p := range r.Providers {
		ms := float64(p.Latency.Microseconds()) / 1000
		st := gen.HealthProviderStatus{Required: p.Required, LatencyMs: &ms, Status: gen.HealthProviderStatusStatusOk}
		if !p.Up {
			st.Status = gen.HealthProviderStatusStatusDown
		}
		if p.Status != "" {
			st.Status = gen.HealthProviderStatusStatus(p.Status)
		}
		if p.Detail != "" {
			detail := p.Detail
			st.Detail = &detail
		}
		report.Providers[name] = st
	}
	if !r.Healthy {
		report.Status = gen.HealthReportStatusUnhealthy
		return gen.Health503JSONResponse(report), nil
	}
	return gen.Health200JSONResponse(report), nil
}
