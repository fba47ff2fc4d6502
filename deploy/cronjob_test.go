package deploy

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// TestNightlyCronJob checks what the nightly run relies on: an incremental
// submit that waits and prints JSON, never two at once, and exit codes 1
// (documents failed) and 2 (bad usage) final while 3 (a server down) is
// retried.
func TestNightlyCronJob(t *testing.T) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	res, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join("k8s", "overlays", "example"))
	if err != nil {
		t.Fatal(err)
	}
	var (
		cj     *batchv1.CronJob
		worker *appsv1.Deployment
	)
	for _, r := range res.Resources() {
		var into any
		switch {
		case r.GetKind() == "CronJob":
			cj = &batchv1.CronJob{}
			into = cj
		case r.GetKind() == "Deployment" && strings.Contains(r.GetName(), "worker"):
			worker = &appsv1.Deployment{}
			into = worker
		default:
			continue
		}
		y, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.UnmarshalStrict(y, into); err != nil {
			t.Fatal(err)
		}
	}
	if cj == nil {
		t.Fatal("the example overlay renders no CronJob")
	}
	if cj.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent {
		t.Errorf("concurrencyPolicy %q, want Forbid", cj.Spec.ConcurrencyPolicy)
	}
	c := cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0]
	if c.Command[0] != "/submit" {
		t.Fatalf("runs %v, want /submit", c.Command)
	}
	for _, flag := range []string{"--wait", "--json"} {
		if !slices.Contains(c.Command, flag) {
			t.Errorf("command %v lacks %s", c.Command, flag)
		}
	}
	if !slices.ContainsFunc(c.Command, func(a string) bool { return strings.HasPrefix(a, "--incremental=") && a != "--incremental=" }) {
		t.Errorf("command %v is not an --incremental run", c.Command)
	}
	pfp := cj.Spec.JobTemplate.Spec.PodFailurePolicy
	if pfp == nil || len(pfp.Rules) == 0 || pfp.Rules[0].OnExitCodes == nil {
		t.Fatal("no podFailurePolicy on exit codes")
	}
	final := pfp.Rules[0].OnExitCodes.Values
	if pfp.Rules[0].Action != batchv1.PodFailurePolicyActionFailJob || !slices.Contains(final, 1) || !slices.Contains(final, 2) || slices.Contains(final, 3) {
		t.Errorf("podFailurePolicy %+v: want exit 1 and 2 final, 3 retried", pfp.Rules[0])
	}
	// A worker delivers the run's webhook when this submit does not: it
	// signs with the same secret.
	if worker == nil {
		t.Fatal("the example overlay renders no worker Deployment")
	}
	sub, wrk := secretRef(c.Env, "EXTRACTQ_WEBHOOK_SECRET"), secretRef(worker.Spec.Template.Spec.Containers[0].Env, "EXTRACTQ_WEBHOOK_SECRET")
	if sub == "" || sub != wrk {
		t.Errorf("EXTRACTQ_WEBHOOK_SECRET from %q in the CronJob and %q in the worker: want one Secret key in both", sub, wrk)
	}
}

// secretRef is the Secret and key the variable name is taken from, "" if none.
func secretRef(env []corev1.EnvVar, name string) string {
	for _, e := range env {
		if e.Name == name && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			return e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		}
	}
	return ""
}
