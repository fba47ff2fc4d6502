package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/testenv"
	"github.com/extractq/extractq/internal/worker"
	"github.com/extractq/extractq/schema"
)

// coreKinds maps the built-in kinds we ship to the Go types they must decode into strictly.
var coreKinds = map[string]func() any{
	"apps/v1/Deployment":            func() any { return &appsv1.Deployment{} },
	"batch/v1/Job":                  func() any { return &batchv1.Job{} },
	"batch/v1/CronJob":              func() any { return &batchv1.CronJob{} },
	"v1/ConfigMap":                  func() any { return &corev1.ConfigMap{} },
	"v1/Secret":                     func() any { return &corev1.Secret{} },
	"v1/Service":                    func() any { return &corev1.Service{} },
	"v1/Namespace":                  func() any { return &corev1.Namespace{} },
	"policy/v1/PodDisruptionBudget": func() any { return &policyv1.PodDisruptionBudget{} },
}

// crdSchemas maps custom kinds to their CRD schema file under shared/testdata/k8s.
var crdSchemas = map[string]string{
	"keda.sh/v1alpha1/ScaledObject":          "keda-scaledobject-v1alpha1.json",
	"keda.sh/v1alpha1/TriggerAuthentication": "keda-triggerauthentication-v1alpha1.json",
	"postgresql.cnpg.io/v1/Cluster":          "cnpg-cluster-v1.json",
}

func sharedK8s(t *testing.T) string {
	t.Helper()
	return testenv.SharedTestdata(t, "k8s")
}

// checker validates rendered manifests: core kinds strictly against the API types, custom
// kinds against their CRD schemas with every declared object closed, as the API server's
// strict field validation would.
type checker struct {
	schemas map[string]*schema.Schema
}

func newChecker(t *testing.T) *checker {
	t.Helper()
	dir := sharedK8s(t)
	c := &checker{schemas: map[string]*schema.Schema{}}
	for kind, file := range crdSchemas {
		raw, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		var doc any
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		closeObjects(doc)
		closed, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		s, err := schema.Compile(closed)
		if err != nil {
			t.Fatalf("compile %s: %v", file, err)
		}
		c.schemas[kind] = s
	}
	return c
}

// closeObjects sets additionalProperties:false on every object schema that lists its
// properties and does not opt into unknown fields, so that a misspelt field is an error.
func closeObjects(v any) {
	switch n := v.(type) {
	case map[string]any:
		_, hasProps := n["properties"]
		_, hasAdditional := n["additionalProperties"]
		preserve, _ := n["x-kubernetes-preserve-unknown-fields"].(bool)
		if hasProps && !hasAdditional && !preserve {
			n["additionalProperties"] = false
		}
		for _, child := range n {
			closeObjects(child)
		}
	case []any:
		for _, child := range n {
			closeObjects(child)
		}
	}
}

// check validates one manifest given as YAML.
func (c *checker) check(manifest []byte) error {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(manifest, &head); err != nil {
		return fmt.Errorf("not YAML: %w", err)
	}
	key := head.APIVersion + "/" + head.Kind
	if newObj, ok := coreKinds[key]; ok {
		if err := yaml.UnmarshalStrict(manifest, newObj()); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		return nil
	}
	s, ok := c.schemas[key]
	if !ok {
		return fmt.Errorf("%s: no type or CRD schema known for this kind; add it to the test's tables", key)
	}
	asJSON, err := yaml.YAMLToJSON(manifest)
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	vs, err := s.ValidateJSON(asJSON)
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	if len(vs) > 0 {
		var msgs []string
		for _, v := range vs {
			msgs = append(msgs, fmt.Sprintf("%s: %s", v.Pointer, v.Message))
		}
		return fmt.Errorf("%s does not match its CRD schema: %s", key, strings.Join(msgs, "; "))
	}
	return nil
}

// TestKustomizations renders every kustomization and checks each resource it produces.
func TestKustomizations(t *testing.T) {
	c := newChecker(t)
	dirs, err := filepath.Glob(filepath.Join("k8s", "overlays", "*"))
	if err != nil {
		t.Fatal(err)
	}
	dirs = append([]string{filepath.Join("k8s", "base")}, dirs...)
	for _, dir := range dirs {
		t.Run(dir, func(t *testing.T) {
			k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
			res, err := k.Run(filesys.MakeFsOnDisk(), dir)
			if err != nil {
				t.Fatalf("kustomize build %s: %v", dir, err)
			}
			kinds := map[string]bool{}
			consumers := map[string]bool{} // of the pools the worker config serves
			var triggers []string
			for _, r := range res.Resources() {
				y, err := r.AsYAML()
				if err != nil {
					t.Fatal(err)
				}
				kinds[r.GetKind()] = true
				if err := c.check(y); err != nil {
					t.Errorf("%s %s: %v", dir, r.GetName(), err)
				}
				switch r.GetKind() {
				case "ConfigMap":
					for _, name := range workerPools(t, y) {
						consumers[jobs.ConsumerName(jobs.PoolFor(name))] = true
					}
				case "ScaledObject":
					triggers = append(triggers, triggerConsumers(t, y)...)
				case "Deployment", "Job":
					if err := workerFindsNATS(y); err != nil {
						t.Errorf("%s %s: %v", dir, r.GetName(), err)
					}
				}
			}
			if len(consumers) == 0 {
				t.Errorf("%s: no worker.yaml with pools in any ConfigMap", dir)
			}
			for _, tc := range triggers {
				if !consumers[tc] {
					t.Errorf("%s: a KEDA trigger watches consumer %q, which no configured pool has (pools give %v)", dir, tc, consumers)
				}
			}
			for _, want := range []string{"Deployment", "Job", "ConfigMap", "PodDisruptionBudget", "ScaledObject"} {
				if !kinds[want] {
					t.Errorf("%s renders no %s", dir, want)
				}
			}
		})
	}
}

// TestCheckerCatchesTypos proves the checks can fail: a misspelt field in a core kind and in
// each custom kind is reported.
func TestCheckerCatchesTypos(t *testing.T) {
	c := newChecker(t)
	cases := []struct{ name, manifest string }{
		{"deployment field", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  replicaz: 2\n"},
		{"container field", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: x}\nspec:\n  template:\n    spec:\n      containers: [{name: a, image: b, comand: [x]}]\n"},
		{"scaledobject field", "apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nmetadata: {name: x}\nspec:\n  scaleTargetRef: {name: w}\n  minReplicaCont: 1\n  triggers: [{type: nats-jetstream, metadata: {}}]\n"},
		{"scaledobject type", "apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nmetadata: {name: x}\nspec:\n  scaleTargetRef: {name: w}\n  maxReplicaCount: many\n  triggers: [{type: nats-jetstream, metadata: {}}]\n"},
		{"cnpg field", "apiVersion: postgresql.cnpg.io/v1\nkind: Cluster\nmetadata: {name: x}\nspec:\n  instances: 3\n  storage: {sise: 1Gi}\n"},
		{"triggerauth field", "apiVersion: keda.sh/v1alpha1\nkind: TriggerAuthentication\nmetadata: {name: x}\nspec:\n  secretTargetRef: [{parameter: p, name: nats, kee: k}]\n"},
		{"unknown kind", "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: x}\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := c.check([]byte(tc.manifest))
			if err == nil {
				t.Fatalf("a manifest with a typo passed:\n%s", tc.manifest)
			}
			t.Log(err)
		})
	}
}

// TestHelmValuesParse keeps the NATS chart values file well-formed and JetStream clustered.
func TestHelmValuesParse(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("helm", "nats-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Config struct {
			Cluster struct {
				Enabled  bool `json:"enabled"`
				Replicas int  `json:"replicas"`
			} `json:"cluster"`
			JetStream struct {
				Enabled bool `json:"enabled"`
			} `json:"jetstream"`
		} `json:"config"`
	}
	if err := yaml.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if !v.Config.Cluster.Enabled || v.Config.Cluster.Replicas != 3 || !v.Config.JetStream.Enabled {
		t.Fatalf("NATS values must enable a 3-replica JetStream cluster, got %+v", v.Config)
	}
}

// workerPools loads the worker.yaml of a ConfigMap with the worker's own strict loader, validates
// it, and returns its pool names; a ConfigMap without worker.yaml gives none.
func workerPools(t *testing.T, manifest []byte) []string {
	t.Helper()
	var cm corev1.ConfigMap
	if err := yaml.Unmarshal(manifest, &cm); err != nil {
		t.Fatal(err)
	}
	body, ok := cm.Data["worker.yaml"]
	if !ok {
		return nil
	}
	path := filepath.Join(t.TempDir(), "worker.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := worker.DefaultConfig()
	if err := cfg.LoadConfigFile(path); err != nil {
		t.Errorf("ConfigMap %s: worker.yaml: %v", cm.Name, err)
		return nil
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("ConfigMap %s: worker.yaml: %v", cm.Name, err)
		return nil
	}
	names := make([]string, len(cfg.Pools))
	for i, p := range cfg.Pools {
		names[i] = p.Name
	}
	return names
}

// triggerConsumers lists the JetStream consumers a ScaledObject's nats-jetstream triggers watch.
func triggerConsumers(t *testing.T, manifest []byte) []string {
	t.Helper()
	var so struct {
		Spec struct {
			Triggers []struct {
				Type     string            `json:"type"`
				Metadata map[string]string `json:"metadata"`
			} `json:"triggers"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(manifest, &so); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tr := range so.Spec.Triggers {
		if tr.Type == "nats-jetstream" {
			out = append(out, tr.Metadata["consumer"])
		}
	}
	return out
}

// workerFindsNATS checks that every container running /worker is told where NATS is, through
// its config file or EXTRACTQ_NATS_URL; otherwise it would dial 127.0.0.1 inside its pod.
func workerFindsNATS(manifest []byte) error {
	var obj struct {
		Spec struct {
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(manifest, &obj); err != nil {
		return err
	}
	for _, c := range obj.Spec.Template.Spec.Containers {
		if len(c.Command) == 0 || c.Command[0] != "/worker" {
			continue
		}
		told := false
		for _, a := range c.Command {
			told = told || a == "--config"
		}
		for _, e := range c.Env {
			told = told || e.Name == "EXTRACTQ_NATS_URL" || e.Name == "EXTRACTQ_CONFIG"
		}
		if !told {
			return fmt.Errorf("container %s runs %v without --config or EXTRACTQ_NATS_URL: it would look for NATS on 127.0.0.1", c.Name, c.Command)
		}
	}
	return nil
}
