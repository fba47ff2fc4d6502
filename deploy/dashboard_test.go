package deploy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/extractq/extractq/internal/metrics"
)

// namesRegisterer records the metric names registered on it.
type namesRegisterer struct{ names map[string]bool }

var fqNameRe = regexp.MustCompile(`fqName: "([^"]+)"`)

func (r *namesRegisterer) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc, 16)
	go func() { c.Describe(ch); close(ch) }()
	for d := range ch {
		if m := fqNameRe.FindStringSubmatch(d.String()); m != nil {
			r.names[m[1]] = true
		}
	}
	return nil
}

func (r *namesRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		_ = r.Register(c)
	}
}

func (r *namesRegisterer) Unregister(prometheus.Collector) bool { return false }

// TestDashboardUsesRealMetrics fails when the Grafana dashboard queries a metric the worker
// does not export (a renamed metric, a typo).
func TestDashboardUsesRealMetrics(t *testing.T) {
	reg := &namesRegisterer{names: map[string]bool{}}
	metrics.New(reg)
	if len(reg.names) == 0 {
		t.Fatal("metrics.New registered nothing")
	}
	raw, err := os.ReadFile(filepath.Join("grafana", "extractq-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard is not JSON: %v", err)
	}
	used := regexp.MustCompile(`extractq_[a-z0-9_]+`)
	seen := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, name := range used.FindAllString(tg.Expr, -1) {
				seen++
				base := name
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if trimmed, ok := strings.CutSuffix(name, suffix); ok && reg.names[trimmed] {
						base = trimmed
					}
				}
				if !reg.names[base] {
					t.Errorf("panel %q queries %s, which the worker does not export", p.Title, name)
				}
			}
		}
	}
	if seen == 0 {
		t.Fatal("the dashboard queries no extractq metric")
	}
}
