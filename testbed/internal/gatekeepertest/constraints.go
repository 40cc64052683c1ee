// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package gatekeepertest // import "github.com/otelcol-policy/otelcol-policy/testbed/internal/gatekeepertest"

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The ConstraintTemplate K8sRequiredLabels: an object violates a constraint of this kind when it lacks one of
// the constraint's parameters.labels. A violation's message is `you must provide labels: {"<label>"}`.
const (
	RequiredLabelsKind = "K8sRequiredLabels"
	requiredLabelsRego = `package k8srequiredlabels

violation[{"msg": msg, "details": {"missing_labels": missing}}] {
  provided := {label | input.review.object.metadata.labels[label]}
  required := {label | label := input.parameters.labels[_]}
  missing := required - provided
  count(missing) > 0
  msg := sprintf("you must provide labels: %v", [missing])
}
`
)

var (
	templateGVR       = schema.GroupVersionResource{Group: "templates.gatekeeper.sh", Version: "v1", Resource: "constrainttemplates"}
	requiredLabelsGVR = schema.GroupVersionResource{Group: "constraints.gatekeeper.sh", Version: "v1beta1", Resource: "k8srequiredlabels"}
)

// RequiredLabelsMessage is the message of a violation of a K8sRequiredLabels constraint requiring label alone.
func RequiredLabelsMessage(label string) string {
	return fmt.Sprintf("you must provide labels: {%q}", label)
}

// RequireLabel makes every Pod in namespaces (all namespaces when none) need label: it applies the template
// K8sRequiredLabels and the constraint name (enforcementAction deny), and returns once Gatekeeper reports the
// constraint enforced, so that every audit run started afterwards evaluates it.
func (g *Gatekeeper) RequireLabel(t testing.TB, name, label string, namespaces ...string) {
	t.Helper()
	g.apply(t, templateGVR, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": templateGVR.GroupVersion().String(), "kind": "ConstraintTemplate",
		"metadata": map[string]any{"name": "k8srequiredlabels"},
		"spec": map[string]any{
			"crd": map[string]any{"spec": map[string]any{
				"names": map[string]any{"kind": RequiredLabelsKind},
				"validation": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object",
					"properties": map[string]any{"labels": map[string]any{
						"type": "array", "items": map[string]any{"type": "string"},
					}},
				}},
			}},
			"targets": []any{map[string]any{"target": "admission.k8s.gatekeeper.sh", "rego": requiredLabelsRego}},
		},
	}})
	match := map[string]any{"kinds": []any{map[string]any{"apiGroups": []any{""}, "kinds": []any{"Pod"}}}}
	if len(namespaces) > 0 {
		ns := make([]any, len(namespaces))
		for i, n := range namespaces {
			ns[i] = n
		}
		match["namespaces"] = ns
	}
	constraint := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": requiredLabelsGVR.GroupVersion().String(), "kind": RequiredLabelsKind,
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"enforcementAction": "deny",
			"match":             match,
			"parameters":        map[string]any{"labels": []any{label}},
		},
	}}
	// The constraint's CRD exists once Gatekeeper has compiled the template (--operation=generate).
	g.waitFor(t, 60*time.Second, func() error {
		_, err := g.dc.Resource(requiredLabelsGVR).Apply(ctx(t), name, constraint, metav1.ApplyOptions{FieldManager: "gatekeepertest", Force: true})
		return err
	})
	g.waitFor(t, 60*time.Second, func() error {
		c, err := g.dc.Resource(requiredLabelsGVR).Get(ctx(t), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		byPod, _, _ := unstructured.NestedSlice(c.Object, "status", "byPod")
		for _, p := range byPod {
			if enforced, _ := p.(map[string]any)["enforced"].(bool); enforced {
				return nil
			}
		}
		return fmt.Errorf("constraint %s not enforced yet, status.byPod: %v", name, byPod)
	})
}

// DeleteConstraint deletes a K8sRequiredLabels constraint.
func (g *Gatekeeper) DeleteConstraint(t testing.TB, name string) {
	t.Helper()
	if err := g.dc.Resource(requiredLabelsGVR).Delete(ctx(t), name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting constraint %s: %v", name, err)
	}
}

func (g *Gatekeeper) apply(t testing.TB, gvr schema.GroupVersionResource, obj *unstructured.Unstructured) {
	t.Helper()
	_, err := g.dc.Resource(gvr).Namespace(obj.GetNamespace()).Apply(ctx(t), obj.GetName(), obj,
		metav1.ApplyOptions{FieldManager: "gatekeepertest", Force: true})
	if err != nil {
		t.Fatalf("applying %s %s: %v", gvr.Resource, obj.GetName(), err)
	}
}
