// Command argo-pods prints, for every pod template of the Argo workflows in
// the files it is given (or on stdin), the pod that Argo's workflow
// controller would create for it, as a YAML stream of Pods that
// `kubectl create --dry-run=server -f -` can judge.
//
// What the controller does that matters to scheduling is done here as it
// does it (workflow/controller/workflowpod.go and workflow/util/util.go of
// argo-workflows v3.6 to v4.1): nodeSelector and tolerations from the
// template when they are non-empty, else from the workflow; affinity from
// the template when set, else from the workflow; schedulerName and
// priorityClassName (podPriorityClassName on the workflow) the same way;
// then the workflow's podSpecPatch and the template's, each a YAML or JSON
// document that must read as a PodSpec, applied in that order as strategic
// merge patches of the PodSpec with k8s.io/apimachinery's strategicpatch.
// Parameters in a patch ({{workflow.parameters.NAME}},
// {{inputs.parameters.NAME}}) take the workflow's argument of that name, as
// a KFP v1 pipeline passes its parameters through. The containers are
// reduced to what the API server needs to judge the pod: Argo's init and
// wait containers beside the template's main container(s).
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	apiv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/yaml"
)

const executorImage = "quay.io/argoproj/argoexec:v3.6.2"

type param struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type template struct {
	Name         string           `json:"name"`
	Container    *apiv1.Container `json:"container"`
	Script       *apiv1.Container `json:"script"`
	Resource     json.RawMessage  `json:"resource"`
	Data         json.RawMessage  `json:"data"`
	ContainerSet *struct {
		Containers []apiv1.Container `json:"containers"`
	} `json:"containerSet"`
	NodeSelector      map[string]string  `json:"nodeSelector"`
	Tolerations       []apiv1.Toleration `json:"tolerations"`
	Affinity          *apiv1.Affinity    `json:"affinity"`
	SchedulerName     string             `json:"schedulerName"`
	PriorityClassName string             `json:"priorityClassName"`
	PodSpecPatch      string             `json:"podSpecPatch"`
	Metadata          struct {
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
}

type spec struct {
	Templates            []template         `json:"templates"`
	NodeSelector         map[string]string  `json:"nodeSelector"`
	Tolerations          []apiv1.Toleration `json:"tolerations"`
	Affinity             *apiv1.Affinity    `json:"affinity"`
	SchedulerName        string             `json:"schedulerName"`
	PodPriorityClassName string             `json:"podPriorityClassName"`
	PodSpecPatch         string             `json:"podSpecPatch"`
	Arguments            struct {
		Parameters []param `json:"parameters"`
	} `json:"arguments"`
	// A CronWorkflow's.
	WorkflowSpec *spec `json:"workflowSpec"`
}

type workflow struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name         string `json:"name"`
		GenerateName string `json:"generateName"`
	} `json:"metadata"`
	Spec spec `json:"spec"`
}

var parameter = regexp.MustCompile(`\{\{\s*(workflow|inputs)\.parameters\.([^}\s]+)\s*\}\}`)
var notName = regexp.MustCompile(`[^a-z0-9-]+`)

func main() {
	var input []byte
	var err error
	if len(os.Args) > 1 {
		for _, f := range os.Args[1:] {
			b, e := os.ReadFile(f)
			if e != nil {
				fail(e)
			}
			input = append(append(input, b...), []byte("\n---\n")...)
		}
	} else if input, err = io.ReadAll(os.Stdin); err != nil {
		fail(err)
	}
	out := os.Stdout
	for i, doc := range documents(input) {
		var w workflow
		if err := yaml.Unmarshal(doc, &w); err != nil {
			fail(fmt.Errorf("document %d: %w", i+1, err))
		}
		if !strings.HasSuffix(w.Kind, "Workflow") && !strings.HasSuffix(w.Kind, "WorkflowTemplate") {
			continue
		}
		s := w.Spec
		if s.WorkflowSpec != nil {
			s = *s.WorkflowSpec
		}
		name := w.Metadata.Name
		if name == "" {
			name = strings.TrimSuffix(w.Metadata.GenerateName, "-")
		}
		for _, t := range s.Templates {
			pod, ok, err := build(name, &s, &t)
			if err != nil {
				fail(fmt.Errorf("%s template %q: %w", name, t.Name, err))
			}
			if !ok {
				continue
			}
			b, err := yaml.Marshal(pod)
			if err != nil {
				fail(err)
			}
			fmt.Fprintf(out, "---\n%s", b)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "argo-pods:", err)
	os.Exit(1)
}

// documents splits a YAML stream at its `---` lines.
func documents(in []byte) [][]byte {
	var out [][]byte
	for _, d := range regexp.MustCompile(`(?m)^---[ \t]*$`).Split(string(in), -1) {
		if strings.TrimSpace(d) != "" {
			out = append(out, []byte(d))
		}
	}
	return out
}

// build is the pod of one template; false for a template that runs no pod.
func build(wf string, s *spec, t *template) (*apiv1.Pod, bool, error) {
	var main []apiv1.Container
	switch {
	case t.Container != nil:
		c := *t.Container
		c.Name = "main"
		main = append(main, c)
	case t.Script != nil:
		c := *t.Script
		c.Name = "main"
		main = append(main, c)
	case t.ContainerSet != nil:
		main = append(main, t.ContainerSet.Containers...)
	case t.Resource != nil || t.Data != nil:
		main = append(main, apiv1.Container{Name: "main", Image: executorImage})
	default:
		return nil, false, nil
	}
	pod := &apiv1.Pod{}
	pod.APIVersion = "v1"
	pod.Kind = "Pod"
	pod.Name = podName(wf, t.Name)
	pod.Labels = map[string]string{"workflows.argoproj.io/workflow": podName(wf, "")}
	for k, v := range t.Metadata.Labels {
		pod.Labels[k] = v
	}
	pod.Annotations = map[string]string{}
	for k, v := range t.Metadata.Annotations {
		pod.Annotations[k] = v
	}
	// Which template the pod is of, for callers that name pods as Argo does.
	pod.Annotations["argo-pods/template"] = t.Name
	pod.Spec.RestartPolicy = apiv1.RestartPolicyNever
	pod.Spec.InitContainers = []apiv1.Container{{Name: "init", Image: executorImage}}
	pod.Spec.Containers = append([]apiv1.Container{{Name: "wait", Image: executorImage}}, main...)
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Image == "" {
			pod.Spec.Containers[i].Image = executorImage
		}
	}
	switch {
	case len(t.NodeSelector) > 0:
		pod.Spec.NodeSelector = t.NodeSelector
	case len(s.NodeSelector) > 0:
		pod.Spec.NodeSelector = s.NodeSelector
	}
	switch {
	case t.Affinity != nil:
		pod.Spec.Affinity = t.Affinity
	case s.Affinity != nil:
		pod.Spec.Affinity = s.Affinity
	}
	switch {
	case len(t.Tolerations) > 0:
		pod.Spec.Tolerations = t.Tolerations
	case len(s.Tolerations) > 0:
		pod.Spec.Tolerations = s.Tolerations
	}
	if t.SchedulerName != "" {
		pod.Spec.SchedulerName = t.SchedulerName
	} else if s.SchedulerName != "" {
		pod.Spec.SchedulerName = s.SchedulerName
	}
	if t.PriorityClassName != "" {
		pod.Spec.PriorityClassName = t.PriorityClassName
	} else if s.PodPriorityClassName != "" {
		pod.Spec.PriorityClassName = s.PodPriorityClassName
	}
	var patches []string
	for _, p := range []string{s.PodSpecPatch, t.PodSpecPatch} {
		if p == "" {
			continue
		}
		sub, err := substitute(p, s)
		if err != nil {
			return nil, false, err
		}
		patches = append(patches, sub)
	}
	if len(patches) > 0 {
		patched, err := applyPodSpecPatch(pod.Spec, patches...)
		if err != nil {
			return nil, false, err
		}
		pod.Spec = *patched
	}
	return pod, true, nil
}

// substitute replaces the parameters of a patch with the workflow's arguments.
func substitute(patch string, s *spec) (string, error) {
	var missing error
	out := parameter.ReplaceAllStringFunc(patch, func(m string) string {
		name := parameter.FindStringSubmatch(m)[2]
		for _, p := range s.Arguments.Parameters {
			if p.Name == name {
				return p.Value
			}
		}
		missing = fmt.Errorf("the podSpecPatch names the parameter %q, which the workflow's arguments lack", name)
		return m
	})
	return out, missing
}

// applyPodSpecPatch is Argo's util.ApplyPodSpecPatch: each patch converted
// from YAML to JSON, checked to read as a PodSpec, and applied as a
// strategic merge patch.
func applyPodSpecPatch(podSpec apiv1.PodSpec, patches ...string) (*apiv1.PodSpec, error) {
	podJSON, err := json.Marshal(podSpec)
	if err != nil {
		return nil, err
	}
	for _, p := range patches {
		patchJSON, err := yaml.YAMLToJSON([]byte(p))
		if err != nil {
			return nil, fmt.Errorf("the podSpecPatch is not YAML: %w", err)
		}
		if err := json.Unmarshal(patchJSON, &apiv1.PodSpec{}); err != nil {
			return nil, fmt.Errorf("invalid podSpecPatch %q: %w", p, err)
		}
		podJSON, err = strategicpatch.StrategicMergePatch(podJSON, patchJSON, apiv1.PodSpec{})
		if err != nil {
			return nil, fmt.Errorf("the strategic merge patch failed: %w", err)
		}
	}
	var out apiv1.PodSpec
	dec := json.NewDecoder(bytes.NewReader(podJSON))
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	return &out, nil
}

// podName is a pod name from the workflow's and the template's.
func podName(wf, template string) string {
	n := strings.ToLower(wf)
	if template != "" {
		n += "-" + strings.ToLower(template)
	}
	n = strings.Trim(notName.ReplaceAllString(n, "-"), "-")
	if len(n) > 63 {
		n = strings.TrimRight(n[:63], "-")
	}
	return n
}
