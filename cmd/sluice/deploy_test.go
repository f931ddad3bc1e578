package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	sigsjson "sigs.k8s.io/json"
	k8syaml "sigs.k8s.io/yaml"
)

// The image every manifest runs, and its non-root user.
const (
	deployImage = "ghcr.io/sluice-data/sluice:latest"
	deployUID   = 65532
)

// manifestDoc is one document of a manifest file.
type manifestDoc struct {
	file, kind, name string
	raw              map[string]any
	data             []byte // the document alone, re-encoded
}

// deployContainer is a container a manifest runs, with where it is.
type deployContainer struct {
	where string
	c     corev1.Container
}

// The Kubernetes manifests are valid objects of the real API types (unknown
// fields fail), carry the settings the distributed compaction and rollup
// rely on, their pipeline validates, and their containers run commands and
// flags sluice has.
func TestDeployKubernetesManifests(t *testing.T) {
	docs := readManifests(t, filepath.Join(repoRoot(t), "deploy", "kubernetes"))
	// Decoded here, not in a subtest, so that each subtest runs alone
	// (-run) with every manifest; "api types" reports the errors.
	var containers []deployContainer
	var decodeErrs []string
	typed := map[string]any{} // kind/name -> decoded object
	for _, d := range docs {
		obj, cs, err := decodeManifest(d)
		if err != nil {
			decodeErrs = append(decodeErrs, fmt.Sprintf("%s: %s %s: %v", d.file, d.kind, d.name, err))
			continue
		}
		key := d.kind + "/" + d.name
		if prev, ok := typed[key]; ok && !reflect.DeepEqual(prev, obj) {
			decodeErrs = append(decodeErrs, fmt.Sprintf("%s: %s is defined again, differently", d.file, key))
		}
		typed[key] = obj
		containers = append(containers, cs...)
	}

	t.Run("api types", func(t *testing.T) {
		for _, e := range decodeErrs {
			t.Error(e)
		}
		kinds := map[string]bool{}
		for _, d := range docs {
			kinds[d.kind] = true
		}
		for _, k := range []string{"ConfigMap", "CronJob", "Deployment", "CronWorkflow"} {
			if !kinds[k] {
				t.Errorf("no %s manifest", k)
			}
		}
	})

	t.Run("design", func(t *testing.T) {
		for _, c := range containers {
			if c.c.Image != deployImage {
				t.Errorf("%s: image %q, want %s", c.where, c.c.Image, deployImage)
			}
		}
		indexed, argo := map[string]bool{}, map[string]bool{}
		for _, d := range docs {
			switch obj := typed[d.kind+"/"+d.name].(type) {
			case *batchv1.CronJob:
				if obj.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent {
					t.Errorf("%s: CronJob %s: concurrencyPolicy %q, want Forbid", d.file, d.name, obj.Spec.ConcurrencyPolicy)
				}
				if cmd := checkIndexedJob(t, d.file, &obj.Spec.JobTemplate.Spec); cmd != "" {
					indexed[cmd] = true
				}
			case *batchv1.Job:
				if cmd := checkIndexedJob(t, d.file, &obj.Spec); cmd != "" {
					indexed[cmd] = true
				}
			case map[string]any:
				if d.kind == "CronWorkflow" {
					for _, cmd := range checkArgoDesign(t, d) {
						argo[cmd] = true
					}
				}
			}
		}
		for _, cmd := range []string{"compact", "rollup"} {
			if !indexed[cmd] {
				t.Errorf("no Indexed Job runs sluice %s --worker", cmd)
			}
			if !argo[cmd] {
				t.Errorf("no CronWorkflow runs sluice %s --worker", cmd)
			}
		}
	})

	t.Run("pipeline validates", func(t *testing.T) {
		for _, d := range docs {
			if d.kind != "ConfigMap" {
				continue
			}
			text, _ := d.raw["data"].(map[string]any)["pipeline.yaml"].(string)
			p := filepath.Join(t.TempDir(), "pipeline.yaml")
			if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			if r := sluice(t, []string{"LAKE_BUCKET=b"}, "validate", "--config", p); r.code != 0 {
				t.Errorf("%s: the pipeline does not validate: %s", d.file, r.stderr)
			}
		}
	})

	// Each container's args name a sluice command and flags it has.
	// Values such as $(JOB_NAME) or {{workflow.name}} are not flags.
	t.Run("commands and flags", func(t *testing.T) {
		helps := map[string]result{}
		for _, c := range containers {
			args := c.c.Args
			if len(args) == 0 {
				t.Errorf("%s: no args", c.where)
				continue
			}
			help, ok := helps[args[0]]
			if !ok {
				help = sluice(t, nil, args[0], "--help")
				helps[args[0]] = help
			}
			if help.code != 0 {
				t.Errorf("%s: sluice %s: no such command", c.where, args[0])
				continue
			}
			for _, a := range args[1:] {
				if flag, ok := strings.CutPrefix(a, "--"); ok && !strings.Contains(help.stdout, "--"+flag+" ") {
					t.Errorf("%s: sluice %s has no flag --%s", c.where, args[0], flag)
				}
			}
		}
	})
}

// readManifests reads every document of every manifest in dir.
func readManifests(t *testing.T, dir string) []manifestDoc {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) < 3 {
		t.Fatalf("%d manifests (%v), want at least the ConfigMap, the CronJob and the Deployment", len(files), err)
	}
	var docs []manifestDoc
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for i := 0; ; i++ {
			var raw map[string]any
			err := dec.Decode(&raw)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: document %d: %v", filepath.Base(f), i+1, err)
			}
			if raw == nil {
				continue // an empty document
			}
			b, err := yaml.Marshal(raw)
			if err != nil {
				t.Fatal(err)
			}
			kind, _ := raw["kind"].(string)
			name, _ := dig(raw, "metadata", "name").(string)
			docs = append(docs, manifestDoc{file: filepath.Base(f), kind: kind, name: name, raw: raw, data: b})
		}
	}
	return docs
}

// decodeManifest decodes d strictly into its Kubernetes API type (an
// Argo kind by hand) and returns it with the containers it runs.
func decodeManifest(d manifestDoc) (any, []deployContainer, error) {
	var obj any
	var gv string
	var pod *corev1.PodSpec
	switch d.kind {
	case "CronJob":
		o := &batchv1.CronJob{}
		obj, gv, pod = o, "batch/v1", &o.Spec.JobTemplate.Spec.Template.Spec
	case "Job":
		o := &batchv1.Job{}
		obj, gv, pod = o, "batch/v1", &o.Spec.Template.Spec
	case "Deployment":
		o := &appsv1.Deployment{}
		obj, gv, pod = o, "apps/v1", &o.Spec.Template.Spec
	case "ConfigMap":
		obj, gv = &corev1.ConfigMap{}, "v1"
	case "ServiceAccount":
		obj, gv = &corev1.ServiceAccount{}, "v1"
	case "Role":
		obj, gv = &rbacv1.Role{}, "rbac.authorization.k8s.io/v1"
	case "RoleBinding":
		obj, gv = &rbacv1.RoleBinding{}, "rbac.authorization.k8s.io/v1"
	case "CronWorkflow":
		cs, err := checkCronWorkflow(d)
		return d.raw, cs, err
	default:
		return nil, nil, fmt.Errorf("kind %q: the test knows no type for it", d.kind)
	}
	if err := strictDecode(d.data, obj); err != nil {
		return nil, nil, err
	}
	if v, _ := d.raw["apiVersion"].(string); v != gv {
		return nil, nil, fmt.Errorf("apiVersion %q, want %s", v, gv)
	}
	if d.name == "" {
		return nil, nil, errors.New("no metadata.name")
	}
	var cs []deployContainer
	if pod != nil {
		if len(pod.Containers) == 0 {
			return nil, nil, errors.New("no containers")
		}
		for _, c := range pod.Containers {
			cs = append(cs, deployContainer{where: fmt.Sprintf("%s: %s %s container %s", d.file, d.kind, d.name, c.Name), c: c})
		}
	}
	return obj, cs, nil
}

// Keys an Argo CronWorkflow's parts may have, as far as these manifests
// use them (a typo fails).
var (
	argoTopKeys      = []string{"apiVersion", "kind", "metadata", "spec"}
	argoSpecKeys     = []string{"schedules", "timezone", "concurrencyPolicy", "startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit", "suspend", "workflowSpec", "workflowMetadata"}
	argoWfKeys       = []string{"entrypoint", "serviceAccountName", "activeDeadlineSeconds", "arguments", "securityContext", "volumes", "templates", "podGC", "ttlStrategy"}
	argoTemplateKeys = []string{"name", "steps", "container", "inputs", "outputs", "retryStrategy", "activeDeadlineSeconds", "metadata"}
	argoStepKeys     = []string{"name", "template", "arguments", "withSequence", "withItems", "continueOn", "when"}
	argoRetryKeys    = []string{"limit", "retryPolicy", "backoff", "expression"}
)

// checkCronWorkflow checks an Argo CronWorkflow's structure by hand and
// strict-decodes its Kubernetes parts (containers, volumes, the pod
// security context) as the core/v1 types they are.
func checkCronWorkflow(d manifestDoc) ([]deployContainer, error) {
	var errs []error
	bad := func(f string, a ...any) { errs = append(errs, fmt.Errorf(f, a...)) }
	strict := func(what string, v, into any) {
		b, _ := yaml.Marshal(v)
		if err := strictDecode(b, into); err != nil {
			bad("%s: %v", what, err)
		}
	}
	if v := d.raw["apiVersion"]; v != "argoproj.io/v1alpha1" {
		bad("apiVersion %v, want argoproj.io/v1alpha1", v)
	}
	if d.name == "" {
		bad("no metadata.name")
	}
	onlyKeys(d.raw, argoTopKeys, "", bad)
	spec, _ := d.raw["spec"].(map[string]any)
	onlyKeys(spec, argoSpecKeys, "spec.", bad)
	if s, _ := spec["schedules"].([]any); len(s) == 0 {
		bad("spec.schedules: want a list of cron schedules")
	}
	wf, _ := spec["workflowSpec"].(map[string]any)
	onlyKeys(wf, argoWfKeys, "spec.workflowSpec.", bad)
	if sc, ok := wf["securityContext"]; ok {
		strict("spec.workflowSpec.securityContext", sc, &corev1.PodSecurityContext{})
	}
	if vs, ok := wf["volumes"]; ok {
		strict("spec.workflowSpec.volumes", vs, &[]corev1.Volume{})
	}
	templates := map[string]bool{}
	tl, _ := wf["templates"].([]any)
	for _, x := range tl {
		tm, _ := x.(map[string]any)
		name, _ := tm["name"].(string)
		if name == "" || templates[name] {
			bad("template %q: want a unique name", name)
		}
		templates[name] = true
	}
	if e, _ := wf["entrypoint"].(string); !templates[e] {
		bad("spec.workflowSpec.entrypoint %q names no template", e)
	}
	var cs []deployContainer
	for _, x := range tl {
		tm, _ := x.(map[string]any)
		name, _ := tm["name"].(string)
		where := "template " + name + ": "
		onlyKeys(tm, argoTemplateKeys, where, bad)
		if r, ok := tm["retryStrategy"].(map[string]any); ok {
			onlyKeys(r, argoRetryKeys, where+"retryStrategy.", bad)
		}
		_, hasSteps := tm["steps"]
		c, hasContainer := tm["container"]
		if hasSteps == hasContainer {
			bad("%swant either steps or a container", where)
		}
		if hasContainer {
			var ct corev1.Container
			strict(where+"container", c, &ct)
			cs = append(cs, deployContainer{where: fmt.Sprintf("%s: CronWorkflow %s template %s", d.file, d.name, name), c: ct})
		}
		groups, _ := tm["steps"].([]any)
		for _, g := range groups {
			steps, _ := g.([]any)
			for _, s := range steps {
				sm, _ := s.(map[string]any)
				onlyKeys(sm, argoStepKeys, where+"step: ", bad)
				if ref, _ := sm["template"].(string); !templates[ref] {
					bad("%sstep %v names no template (%q)", where, sm["name"], ref)
				}
			}
		}
	}
	return cs, errors.Join(errs...)
}

// onlyKeys reports m's keys that are not in allowed.
func onlyKeys(m map[string]any, allowed []string, where string, bad func(string, ...any)) {
	for k := range m {
		if !slices.Contains(allowed, k) {
			bad("%s%s: unknown field", where, k)
		}
	}
}

// checkIndexedJob checks the settings a distributed compaction or rollup
// in an Indexed Job relies on, when the Job's container runs a --worker;
// it returns that sluice command ("" for another Job).
func checkIndexedJob(t *testing.T, file string, js *batchv1.JobSpec) string {
	t.Helper()
	pod := &js.Template.Spec
	if len(pod.Containers) != 1 || !slices.Contains(pod.Containers[0].Args, "--worker") {
		return ""
	}
	c := pod.Containers[0]
	where := file + ": container " + c.Name
	if js.CompletionMode == nil || *js.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("%s: a --worker Job wants completionMode Indexed", where)
	}
	if js.Completions == nil || js.Parallelism == nil || *js.Completions != *js.Parallelism {
		t.Errorf("%s: completions %v and parallelism %v, want them equal", where, ptrText(js.Completions), ptrText(js.Parallelism))
	}
	if js.BackoffLimitPerIndex == nil {
		t.Errorf("%s: no backoffLimitPerIndex", where)
	}
	if pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("%s: restartPolicy %q, want Never (podFailurePolicy requires it)", where, pod.RestartPolicy)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if e := env["JOB_NAME"]; e.ValueFrom == nil || e.ValueFrom.FieldRef == nil ||
		e.ValueFrom.FieldRef.FieldPath != "metadata.labels['batch.kubernetes.io/job-name']" {
		t.Errorf("%s: JOB_NAME is not the Job's name from the downward API: %+v", where, e)
	}
	if js.Completions != nil && env["JOB_COMPLETIONS"].Value != strconv.Itoa(int(*js.Completions)) {
		t.Errorf("%s: JOB_COMPLETIONS %q, want completions, %d", where, env["JOB_COMPLETIONS"].Value, *js.Completions)
	}
	if e := env["SLUICE_INSTANCE"]; e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("%s: SLUICE_INSTANCE is not the pod's name", where)
	}
	for _, f := range []string{"--plan", "--commit"} {
		if !slices.Contains(c.Args, f) {
			t.Errorf("%s: args lack %s: every pod plans, works and commits", where, f)
		}
	}
	if i := slices.Index(c.Args, "--plan-id"); i < 0 || i+1 >= len(c.Args) || c.Args[i+1] != "$(JOB_NAME)" {
		t.Errorf("%s: want --plan-id $(JOB_NAME) in args %q", where, c.Args)
	}
	checkHardened(t, where, c, pod.Volumes)
	return c.Args[0]
}

// checkArgoDesign checks the steps of a distributed CronWorkflow and
// returns the sluice commands whose --worker it runs.
func checkArgoDesign(t *testing.T, d manifestDoc) []string {
	t.Helper()
	if p := dig(d.raw, "spec", "concurrencyPolicy"); p != "Forbid" {
		t.Errorf("%s: CronWorkflow %s: concurrencyPolicy %v, want Forbid", d.file, d.name, p)
	}
	var vols []corev1.Volume
	if vs, ok := dig(d.raw, "spec", "workflowSpec", "volumes").([]any); ok {
		b, _ := yaml.Marshal(vs)
		_ = k8syaml.Unmarshal(b, &vols)
	}
	var cmds []string
	steps := map[string]bool{}
	tl, _ := dig(d.raw, "spec", "workflowSpec", "templates").([]any)
	for _, x := range tl {
		tm, _ := x.(map[string]any)
		c, ok := tm["container"]
		if !ok {
			continue
		}
		var ct corev1.Container
		b, _ := yaml.Marshal(c)
		if err := k8syaml.Unmarshal(b, &ct); err != nil || len(ct.Args) == 0 {
			continue // reported by the api types subtest
		}
		where := fmt.Sprintf("%s: template %v", d.file, tm["name"])
		if i := slices.Index(ct.Args, "--plan-id"); i < 0 || i+1 >= len(ct.Args) || ct.Args[i+1] != "{{workflow.name}}" {
			t.Errorf("%s: want --plan-id {{workflow.name}} in args %q", where, ct.Args)
		}
		if len(ct.Command) == 0 {
			t.Errorf("%s: no command (Argo's executor would look the entrypoint up)", where)
		}
		for _, s := range []string{"--plan", "--worker", "--commit"} {
			if slices.Contains(ct.Args, s) {
				steps[s] = true
			}
		}
		if slices.Contains(ct.Args, "--worker") {
			i := slices.Index(ct.Args, "--shard")
			if i < 0 || i+1 >= len(ct.Args) || !strings.HasSuffix(ct.Args[i+1], "/{{workflow.parameters.shards}}") {
				t.Errorf("%s: want --shard i/{{workflow.parameters.shards}} in args %q", where, ct.Args)
			}
			cmds = append(cmds, ct.Args[0])
		}
		checkHardened(t, where, ct, vols)
	}
	if len(cmds) > 0 && len(steps) != 3 {
		t.Errorf("%s: CronWorkflow %s: steps %v, want --plan, --worker and --commit", d.file, d.name, steps)
	}
	return cmds
}

// checkHardened checks that c runs as the image's non-root user on a
// read-only root filesystem with no capabilities, /tmp on an emptyDir.
func checkHardened(t *testing.T, where string, c corev1.Container, vols []corev1.Volume) {
	t.Helper()
	sc := c.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != deployUID {
		t.Errorf("%s: want securityContext runAsNonRoot and runAsUser %d", where, deployUID)
		return
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("%s: want readOnlyRootFilesystem", where)
	}
	if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
		t.Errorf("%s: want capabilities drop ALL", where)
	}
	for _, m := range c.VolumeMounts {
		if m.MountPath != "/tmp" {
			continue
		}
		for _, v := range vols {
			if v.Name == m.Name && v.EmptyDir != nil {
				return
			}
		}
	}
	t.Errorf("%s: want /tmp mounted from an emptyDir (the root filesystem is read-only)", where)
}

// strictDecode decodes a YAML document into obj as the API server does:
// field names match case-sensitively, and an unknown or duplicate field
// fails.
func strictDecode(data []byte, obj any) error {
	j, err := k8syaml.YAMLToJSON(data)
	if err != nil {
		return err
	}
	strictErrs, err := sigsjson.UnmarshalStrict(j, obj)
	return errors.Join(append(strictErrs, err)...)
}

// dig walks nested maps by keys.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func ptrText(p *int32) string {
	if p == nil {
		return "unset"
	}
	return strconv.Itoa(int(*p))
}
