package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The Kubernetes manifests parse, their containers run commands and flags
// sluice has, and the pipeline in the ConfigMap validates.
func TestDeployKubernetesManifests(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "deploy", "kubernetes")
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if len(files) < 3 {
		t.Fatalf("%d manifests, want the ConfigMap, the CronJob and the Deployment", len(files))
	}
	kinds := map[string]bool{}
	for _, f := range files {
		data, _ := os.ReadFile(f)
		var doc map[string]any
		if err := yaml.Unmarshal(data, &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		kinds[doc["kind"].(string)] = true
		if doc["kind"] == "ConfigMap" {
			p := filepath.Join(t.TempDir(), "pipeline.yaml")
			os.WriteFile(p, []byte(doc["data"].(map[string]any)["pipeline.yaml"].(string)), 0o644)
			if r := sluice(t, []string{"LAKE_BUCKET=b"}, "validate", "--config", p); r.code != 0 {
				t.Errorf("%s: the pipeline does not validate: %s", f, r.stderr)
			}
		}
		for _, args := range containerArgs(doc) {
			help := sluice(t, nil, args[0], "--help")
			if help.code != 0 {
				t.Errorf("%s: sluice %s: no such command", f, args[0])
			}
			for _, a := range args[1:] {
				if flag, ok := strings.CutPrefix(a, "--"); ok && !strings.Contains(help.stdout, "--"+flag+" ") {
					t.Errorf("%s: sluice %s has no flag --%s", f, args[0], flag)
				}
			}
		}
	}
	for _, k := range []string{"ConfigMap", "CronJob", "Deployment"} {
		if !kinds[k] {
			t.Errorf("no %s manifest", k)
		}
	}
}

// containerArgs finds every containers[].args list in a manifest.
func containerArgs(v any) [][]string {
	var out [][]string
	switch v := v.(type) {
	case map[string]any:
		if cs, ok := v["containers"].([]any); ok {
			for _, c := range cs {
				var args []string
				for _, a := range c.(map[string]any)["args"].([]any) {
					args = append(args, a.(string))
				}
				out = append(out, args)
			}
		}
		for _, x := range v {
			out = append(out, containerArgs(x)...)
		}
	case []any:
		for _, x := range v {
			out = append(out, containerArgs(x)...)
		}
	}
	return out
}
