package catalog

import "time"

// cadence is the declared update period of each ISO 19115 maintenance frequency that has one.
var cadence = map[string]time.Duration{
	"continual":   24 * time.Hour,
	"daily":       24 * time.Hour,
	"weekly":      7 * 24 * time.Hour,
	"fortnightly": 14 * 24 * time.Hour,
	"monthly":     30 * 24 * time.Hour,
	"quarterly":   91 * 24 * time.Hour,
	"biannually":  182 * 24 * time.Hour,
	"annually":    365 * 24 * time.Hour,
}

// Freshness applies the rule of spec section 2.5: "due" past one declared period since the last
// refresh, "overdue" past two, "fresh" before; "unknown" when the origin cannot be refreshed
// (created), no cadence is declared, or nothing was refreshed yet. Advisory only.
func Freshness(origin string, updateFrequency *string, lastRefreshed *time.Time, now time.Time) string {
	if origin == "created" || updateFrequency == nil || lastRefreshed == nil {
		return "unknown"
	}
	period, ok := cadence[*updateFrequency]
	if !ok {
		return "unknown"
	}
	switch age := now.Sub(*lastRefreshed); {
	case age > 2*period:
		return "overdue"
	case age > period:
		return "due"
	default:
		return "fresh"
	}
}

// Cadence is the declared period of an update_frequency, false when it declares none.
func Cadence(updateFrequency string) (time.Duration, bool) {
	d, ok := cadence[updateFrequency]
	return d, ok
}
