package settings

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{in: "90s", want: 90 * time.Second},
		{in: "7d", want: 7 * 24 * time.Hour},
		{in: "1d12h", want: 36 * time.Hour},
		{in: "1.5d", want: 36 * time.Hour},
		{in: " 30m ", want: 30 * time.Minute},
		{in: "0", want: 0},
		{in: "", bad: true},
		{in: "d", bad: true},
		{in: "7days", bad: true},
		{in: "-1d", bad: true},
		{in: "1d-1h", bad: true},
		{in: "soon", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseDuration(tt.in)
			if tt.bad {
				if !errors.Is(err, ErrDuration) {
					t.Fatalf("ParseDuration(%q) = %v, %v; want ErrDuration", tt.in, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseDuration(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestFormatDuration(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{7 * 24 * time.Hour: "7d", 90 * time.Second: "1m30s", 0: "0s"} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
		if back, err := ParseDuration(FormatDuration(d)); err != nil || back != d {
			t.Errorf("ParseDuration(FormatDuration(%v)) = %v, %v", d, back, err)
		}
	}
}

func TestNewLogger(t *testing.T) {
	t.Parallel()
	tests := []struct {
		format, level string
		wantJSON      bool
		bad           string
	}{
		{format: "json", level: "info", wantJSON: true},
		{format: "auto", level: "debug", wantJSON: true}, // a buffer is not a terminal
		{format: "text", level: "warn"},
		{format: "xml", level: "info", bad: "log format"},
		{format: "json", level: "loud", bad: "log level"},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		log, err := NewLogger(&b, tt.format, tt.level)
		if tt.bad != "" {
			if err == nil || !strings.Contains(err.Error(), tt.bad) {
				t.Errorf("NewLogger(%s, %s) error %v, want one about %s", tt.format, tt.level, err, tt.bad)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		log.Error("hello")
		if got := strings.HasPrefix(b.String(), "{"); got != tt.wantJSON {
			t.Errorf("NewLogger(%s): JSON %v, want %v: %s", tt.format, got, tt.wantJSON, b.String())
		}
	}
}
