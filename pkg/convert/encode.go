package convert

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// Manifest is obj as a user writes it: no status, no empty
// creationTimestamp.
func Manifest(obj runtime.Object) (map[string]any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.Object, nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding %T: %w", obj, err)
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok && md["creationTimestamp"] == nil {
		delete(md, "creationTimestamp")
	}
	pruneEmpty(m)
	return m, nil
}

// pruneEmpty drops the empty objects the Go types write for unset structs
// (disruption: {}, metadata: {}), so the output reads as a person writes it.
func pruneEmpty(m map[string]any) {
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			pruneEmpty(sub)
			if len(sub) == 0 {
				delete(m, k)
			}
		}
	}
}

// WriteYAML writes the objects as multi-document YAML, each preceded by
// its warnings as comments.
func WriteYAML(w io.Writer, res *Result) error {
	for i, obj := range res.Objects {
		m, err := Manifest(obj)
		if err != nil {
			return err
		}
		b, err := yaml.Marshal(m)
		if err != nil {
			return fmt.Errorf("encoding %s: %w", objectName(obj), err)
		}
		var sb strings.Builder
		if i > 0 {
			sb.WriteString("---\n")
		}
		for _, wn := range res.Warnings {
			if wn.Object == objectName(obj) {
				fmt.Fprintf(&sb, "# warning: %s\n", strings.TrimPrefix(wn.String(), wn.Object+": "))
			}
		}
		sb.Write(b)
		if _, err := io.WriteString(w, sb.String()); err != nil {
			return err
		}
	}
	return nil
}

// WriteJSON writes the objects as one v1 List.
func WriteJSON(w io.Writer, res *Result) error {
	items := make([]any, 0, len(res.Objects))
	for _, obj := range res.Objects {
		m, err := Manifest(obj)
		if err != nil {
			return err
		}
		items = append(items, m)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
}

func objectName(obj runtime.Object) string {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	acc, err := meta.Accessor(obj)
	if err != nil {
		return kind
	}
	return kind + "/" + acc.GetName()
}
