package dupless

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseWhen reads a point in time for --at: RFC 3339 ("2026-11-23T14:00:00Z"), a local
// date and time ("2026-11-23 14:00", "2026-11-23 14:00:05"), a local date, or an age before
// now ("90m", "36h", "7d"). A local date or time means the end of what it names, as
// 'veil snapshots' and 'veil log' print times (to the second): "2026-11-23" is that day as
// it ended, "2026-11-23 14:00:05" that second, so a printed time selects its snapshot.
func ParseWhen(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	for _, l := range []struct {
		layout string
		unit   time.Duration
	}{{time.DateTime, time.Second}, {"2006-01-02 15:04", time.Minute}, {"2006-01-02T15:04:05", time.Second}, {"2006-01-02T15:04", time.Minute}} {
		if t, err := time.ParseInLocation(l.layout, s, time.Local); err == nil {
			return t.Add(l.unit - time.Nanosecond), nil
		}
	}
	if t, err := time.ParseInLocation(time.DateOnly, s, time.Local); err == nil {
		return t.AddDate(0, 0, 1).Add(-time.Nanosecond), nil
	}
	if d, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(d); err == nil && n >= 0 {
			return now.AddDate(0, 0, -n), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("time %q: use 2006-01-02, \"2006-01-02 15:04[:05]\", RFC 3339, or an age such as 90m, 36h, 7d", s)
}
