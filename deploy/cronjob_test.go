package deploy

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
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
	var cj *batchv1.CronJob
	for _, r := range res.Resources() {
		if r.GetKind() != "CronJob" {
			continue
		}
		y, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		cj = &batchv1.CronJob{}
		if err := yaml.UnmarshalStrict(y, cj); err != nil {
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
}
