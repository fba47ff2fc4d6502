package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/extractq/extractq/internal/worker"
)

// composeDefault resolves ${NAME:-default} to its default, as docker compose does when NAME is unset.
var composeDefault = regexp.MustCompile(`\$\{[A-Z_]+:-([^}]*)\}`)

// TestComposeWorkerConfig checks the worker service of docker-compose.yml against the worker's
// own configuration code: every EXTRACTQ_* variable it sets is one the worker reads, and the
// configuration they make (with no .env file) validates.
func TestComposeWorkerConfig(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			Entrypoint  []string          `json:"entrypoint"`
			Environment map[string]string `json:"environment"`
		} `json:"services"`
	}
	if err := yaml.Unmarshal(raw, &compose); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	w, ok := compose.Services["worker"]
	if !ok || len(w.Entrypoint) < 2 || w.Entrypoint[0] != "/worker" || w.Entrypoint[1] != "run" {
		t.Fatalf("docker-compose.yml has no worker service running `/worker run`: %+v", w)
	}
	env := map[string]string{}
	for k, v := range w.Environment {
		env[k] = composeDefault.ReplaceAllString(v, "$1")
	}
	asked := map[string]bool{}
	cfg := worker.DefaultConfig()
	if err := cfg.LoadEnv(func(name string) string { asked[name] = true; return env[name] }); err != nil {
		t.Fatalf("worker environment in docker-compose.yml: %v", err)
	}
	for k := range env {
		if strings.HasPrefix(k, "EXTRACTQ_") && !asked[k] {
			t.Errorf("docker-compose.yml sets %s, which the worker does not read", k)
		}
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("worker configuration in docker-compose.yml: %v", err)
	}
	if len(cfg.Pools) == 0 {
		t.Error("the compose worker serves no pool")
	}
}
