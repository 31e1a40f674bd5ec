package dupless

import (
	"testing"
	"time"
)

func TestParseWhen(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	cases := map[string]time.Time{
		"2026-11-20T10:00:00Z": time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC),
		"2026-11-20 10:30":     time.Date(2026, 11, 20, 10, 31, 0, 0, time.Local).Add(-1),
		"2026-11-20 10:30:05":  time.Date(2026, 11, 20, 10, 30, 6, 0, time.Local).Add(-1),
		"2026-11-20":           time.Date(2026, 11, 21, 0, 0, 0, 0, time.Local).Add(-1),
		"90m":                  now.Add(-90 * time.Minute),
		"2d":                   now.AddDate(0, 0, -2),
	}
	for in, want := range cases {
		got, err := ParseWhen(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("ParseWhen(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "yesterday", "-5m", "2026-13-01", "5x"} {
		if _, err := ParseWhen(bad, now); err == nil {
			t.Errorf("ParseWhen(%q) accepted", bad)
		}
	}
}
