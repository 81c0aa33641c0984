// Package deploy holds the container image build and the Kubernetes and
// OpenTelemetry Collector manifests that run ktrace on every node; its
// tests validate them (no cluster needed).
package deploy

import (
	"bytes"
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/internal/vmtest"
	"github.com/ktrace-dev/ktrace/session"
)

// objects are the manifests' objects by kind/name, each decoded strictly
// into its Kubernetes API type: an unknown field, a misspelt one or a
// value of the wrong type fails, as kubectl's client-side validation
// does.
type objects struct {
	daemonSets  map[string]*appsv1.DaemonSet
	deployments map[string]*appsv1.Deployment
	services    map[string]*corev1.Service
	configMaps  map[string]*corev1.ConfigMap
	namespaces  map[string]*corev1.Namespace
}

func load(t *testing.T, files ...string) *objects {
	t.Helper()
	o := &objects{
		daemonSets: map[string]*appsv1.DaemonSet{}, deployments: map[string]*appsv1.Deployment{},
		services: map[string]*corev1.Service{}, configMaps: map[string]*corev1.ConfigMap{}, namespaces: map[string]*corev1.Namespace{},
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range regexp.MustCompile(`(?m)^---$`).Split(string(data), -1) {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			var head struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
			}
			if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
				t.Fatalf("%s: document %d: %v", f, i, err)
			}
			var obj interface{ GetName() string }
			want := ""
			switch head.Kind {
			case "DaemonSet":
				obj, want = &appsv1.DaemonSet{}, "apps/v1"
			case "Deployment":
				obj, want = &appsv1.Deployment{}, "apps/v1"
			case "Service":
				obj, want = &corev1.Service{}, "v1"
			case "ConfigMap":
				obj, want = &corev1.ConfigMap{}, "v1"
			case "Namespace":
				obj, want = &corev1.Namespace{}, "v1"
			default:
				t.Fatalf("%s: document %d: kind %q is not one this test knows", f, i, head.Kind)
			}
			if head.APIVersion != want {
				t.Errorf("%s: %s: apiVersion %q, want %q", f, head.Kind, head.APIVersion, want)
			}
			if err := strictDecode([]byte(doc), obj); err != nil {
				t.Fatalf("%s: document %d (%s): %v", f, i, head.Kind, err)
			}
			if obj.GetName() == "" {
				t.Errorf("%s: document %d (%s) has no name", f, i, head.Kind)
			}
			switch x := obj.(type) {
			case *appsv1.DaemonSet:
				o.daemonSets[x.Name] = x
			case *appsv1.Deployment:
				o.deployments[x.Name] = x
			case *corev1.Service:
				o.services[x.Name] = x
			case *corev1.ConfigMap:
				o.configMaps[x.Name] = x
			case *corev1.Namespace:
				o.namespaces[x.Name] = x
			}
		}
	}
	return o
}

// strictDecode decodes YAML as the API server decodes JSON: field names
// match case-sensitively, and an unknown or duplicate field is an error.
func strictDecode(doc []byte, v any) error {
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return err
	}
	strict, err := kjson.UnmarshalStrict(js, v, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// checkPod checks what any pod template needs to be accepted: a selector
// matching the template's labels, named containers with images, mounts of
// declared volumes.
func checkPod(t *testing.T, what string, sel map[string]string, tmpl corev1.PodTemplateSpec) {
	t.Helper()
	if len(sel) == 0 {
		t.Errorf("%s: empty selector", what)
	}
	for k, v := range sel {
		if tmpl.Labels[k] != v {
			t.Errorf("%s: selector %s=%s does not match the template's labels %v", what, k, v, tmpl.Labels)
		}
	}
	vols := map[string]bool{}
	for _, v := range tmpl.Spec.Volumes {
		if vols[v.Name] {
			t.Errorf("%s: volume %s twice", what, v.Name)
		}
		vols[v.Name] = true
	}
	if len(tmpl.Spec.Containers) == 0 {
		t.Errorf("%s: no containers", what)
	}
	for _, c := range tmpl.Spec.Containers {
		if c.Name == "" || c.Image == "" {
			t.Errorf("%s: container without name or image: %+v", what, c)
		}
		for _, m := range c.VolumeMounts {
			if !vols[m.Name] {
				t.Errorf("%s: container %s mounts undeclared volume %s", what, c.Name, m.Name)
			}
			if !filepath.IsAbs(m.MountPath) {
				t.Errorf("%s: mount path %q is not absolute", what, m.MountPath)
			}
		}
	}
}

// TestDaemonSet validates the DaemonSet manifest: Kubernetes types, a
// privileged ktrace with the host's tracefs, debugfs and BTF mounted and
// the host's PIDs, the session from the ConfigMap (which loads as a
// session on the 6.12 model, with its events enabled), and the OTLP
// endpoint from the environment, naming the collector's Service.
func TestDaemonSet(t *testing.T) {
	o := load(t, "ktrace-daemonset.yaml", "otel-collector.yaml")
	ds := o.daemonSets["ktrace"]
	if ds == nil {
		t.Fatal("no DaemonSet ktrace")
	}
	if o.namespaces[ds.Namespace] == nil {
		t.Errorf("namespace %q is not in the manifest", ds.Namespace)
	}
	checkPod(t, "DaemonSet ktrace", ds.Spec.Selector.MatchLabels, ds.Spec.Template)
	spec := ds.Spec.Template.Spec
	if !spec.HostPID {
		t.Errorf("hostPID is off: pids and /proc would be the pod's")
	}
	c := spec.Containers[0]
	if sc := c.SecurityContext; sc == nil || sc.Privileged == nil || !*sc.Privileged {
		t.Errorf("container is not privileged")
	}
	hostPaths := map[string]string{} // mount path -> host path
	vols := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		vols[v.Name] = v
	}
	var sessionDir, cm string
	for _, m := range c.VolumeMounts {
		v := vols[m.Name]
		switch {
		case v.HostPath != nil:
			hostPaths[m.MountPath] = v.HostPath.Path
		case v.ConfigMap != nil:
			sessionDir, cm = m.MountPath, v.ConfigMap.Name
		}
	}
	for _, p := range []string{"/sys/kernel/tracing", "/sys/kernel/debug", "/sys/kernel/btf"} {
		if hostPaths[p] != p {
			t.Errorf("the host's %s is not mounted at %s (mounts %v)", p, p, hostPaths)
		}
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	endpoint := env["OTEL_EXPORTER_OTLP_ENDPOINT"]
	if endpoint == "" || env["OTEL_EXPORTER_OTLP_PROTOCOL"] != "grpc" {
		t.Errorf("OTLP endpoint/protocol not from the environment: %v", env)
	}
	// The endpoint is the collector Service's gRPC port.
	m := regexp.MustCompile(`^http://([^.]+)\.([^.]+)\.svc:(\d+)$`).FindStringSubmatch(endpoint)
	if m == nil {
		t.Fatalf("endpoint %q is not a Service address", endpoint)
	}
	svc := o.services[m[1]]
	if svc == nil || svc.Namespace != m[2] {
		t.Fatalf("endpoint %q: no Service %s in namespace %s", endpoint, m[1], m[2])
	}
	if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == "otlp-grpc" && p.Port == 4317 && m[3] == "4317" }) {
		t.Errorf("endpoint %q is not the Service's otlp-grpc port", endpoint)
	}
	if !strings.Contains(env["OTEL_RESOURCE_ATTRIBUTES"], "host.name=$(NODE_NAME)") {
		t.Errorf("host.name is not the node: %q", env["OTEL_RESOURCE_ATTRIBUTES"])
	}
	// ktrace's arguments: a session file in the ConfigMap's mount,
	// record with the OTLP export.
	args := c.Args
	var sessionFile string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--session="); ok {
			sessionFile = v
		}
	}
	if !slices.Contains(args, "record") || !slices.Contains(args, "--export=otlp") {
		t.Errorf("args %v do not record with --export=otlp", args)
	}
	if sessionFile == "" || filepath.Dir(sessionFile) != sessionDir {
		t.Fatalf("session %q is not in the ConfigMap's mount %s", sessionFile, sessionDir)
	}
	text, ok := o.configMaps[cm].Data[filepath.Base(sessionFile)]
	if !ok {
		t.Fatalf("ConfigMap %s has no key %s", cm, filepath.Base(sessionFile))
	}
	// The session loads as ktrace loads it, with every event enabled.
	p := filepath.Join(t.TempDir(), "session")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := session.Open(p, events.NewRegistry(vmtest.Model(t, "6.12"), nil), session.Replayer{})
	if err != nil {
		t.Fatalf("the ConfigMap's session does not load: %v", err)
	}
	n := 0
	for _, ev := range st.Reg.Events() {
		if !ev.Enabled {
			t.Errorf("event %s/%s is defined but not enabled", ev.Group, ev.Name)
		}
		n++
	}
	if n == 0 {
		t.Errorf("the session defines no event")
	}
}

// TestCollector validates the collector's Deployment and configuration:
// OTLP gRPC and HTTP receivers on the Service's ports, every pipeline
// naming defined components, the file exporter writing into a mounted
// volume.
func TestCollector(t *testing.T) {
	o := load(t, "otel-collector.yaml")
	dep := o.deployments["otel-collector"]
	if dep == nil {
		t.Fatal("no Deployment otel-collector")
	}
	checkPod(t, "Deployment otel-collector", dep.Spec.Selector.MatchLabels, dep.Spec.Template)
	svc := o.services["otel-collector"]
	if svc == nil {
		t.Fatal("no Service otel-collector")
	}
	for k, v := range svc.Spec.Selector {
		if dep.Spec.Template.Labels[k] != v {
			t.Errorf("Service selector %s=%s does not select the collector's pods", k, v)
		}
	}
	data, err := os.ReadFile("otel-collector-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Receivers  map[string]map[string]any `json:"receivers"`
		Processors map[string]map[string]any `json:"processors"`
		Exporters  map[string]map[string]any `json:"exporters"`
		Service    struct {
			Pipelines map[string]struct {
				Receivers  []string `json:"receivers"`
				Processors []string `json:"processors"`
				Exporters  []string `json:"exporters"`
			} `json:"pipelines"`
		} `json:"service"`
	}
	if err := strictDecode(data, &cfg); err != nil {
		t.Fatal(err)
	}
	protos, _ := cfg.Receivers["otlp"]["protocols"].(map[string]any)
	for name, port := range map[string]string{"grpc": "4317", "http": "4318"} {
		p, _ := protos[name].(map[string]any)
		ep, _ := p["endpoint"].(string)
		if !strings.HasSuffix(ep, ":"+port) {
			t.Errorf("otlp %s receiver endpoint %q, want port %s", name, ep, port)
		}
		if !slices.ContainsFunc(svc.Spec.Ports, func(sp corev1.ServicePort) bool { return sp.TargetPort.String() == port }) {
			t.Errorf("the Service does not expose port %s", port)
		}
	}
	for _, sig := range []string{"logs", "metrics"} {
		p, ok := cfg.Service.Pipelines[sig]
		if !ok {
			t.Errorf("no %s pipeline", sig)
			continue
		}
		for _, r := range p.Receivers {
			if _, ok := cfg.Receivers[r]; !ok {
				t.Errorf("%s pipeline: receiver %s is not defined", sig, r)
			}
		}
		for _, r := range p.Processors {
			if _, ok := cfg.Processors[r]; !ok {
				t.Errorf("%s pipeline: processor %s is not defined", sig, r)
			}
		}
		for _, r := range p.Exporters {
			if _, ok := cfg.Exporters[r]; !ok {
				t.Errorf("%s pipeline: exporter %s is not defined", sig, r)
			}
		}
	}
	path, _ := cfg.Exporters["file"]["path"].(string)
	c := dep.Spec.Template.Spec.Containers[0]
	if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
		return !m.ReadOnly && strings.HasPrefix(path, m.MountPath+"/")
	}) {
		t.Errorf("file exporter path %q is not in a writable volume", path)
	}
	// The collector reads the configuration from the ConfigMap the
	// manifest's comment creates, at --config.
	var cmName, cfgDir string
	for _, v := range dep.Spec.Template.Spec.Volumes {
		if v.ConfigMap != nil {
			cmName = v.ConfigMap.Name
			for _, m := range c.VolumeMounts {
				if m.Name == v.Name {
					cfgDir = m.MountPath
				}
			}
		}
	}
	manifest, _ := os.ReadFile("otel-collector.yaml")
	if !bytes.Contains(manifest, []byte("create configmap "+cmName+" \\\n#     --from-file=config.yaml=deploy/otel-collector-config.yaml")) {
		t.Errorf("the manifest does not say how to create ConfigMap %s", cmName)
	}
	if !slices.Contains(c.Args, "--config="+cfgDir+"/config.yaml") {
		t.Errorf("collector args %v do not read %s/config.yaml", c.Args, cfgDir)
	}
}

// TestImageBuild checks the image's build: the build script's syntax, and
// the Dockerfile's go build command run here gives a static ktrace (no
// ELF interpreter, no shared libraries).
func TestImageBuild(t *testing.T) {
	if out, err := exec.Command("bash", "-n", "build-image.sh").CombinedOutput(); err != nil {
		t.Fatalf("build-image.sh: %v\n%s", err, out)
	}
	df, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^RUN (CGO_ENABLED=0 go build .*) -o (\S+) (\./cmd/ktrace)$`).FindStringSubmatch(string(df))
	if m == nil {
		t.Fatal("the Dockerfile has no RUN CGO_ENABLED=0 go build ... -o OUT ./cmd/ktrace")
	}
	if testing.Short() {
		t.Skip("-short: not building ktrace")
	}
	out := filepath.Join(t.TempDir(), "ktrace")
	fields := strings.Fields(m[1])
	cmd := exec.Command("go", append(fields[2:], "-o", out, m[3])...)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), fields[0])
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, b)
	}
	f, err := elf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("ktrace is not static: it has a %v program header", p.Type)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("ktrace needs shared libraries %v", libs)
	}
}
