package convert

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// Warning is something of the input that the output does not carry as it
// was: a field without a Nodesmith equivalent, a value changed to keep the
// old behaviour, a setting moved to another object.
type Warning struct {
	// Object is the source object, as Kind/name.
	Object string `json:"object"`
	// Field is the path of the field in the source object, if one.
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

func (w Warning) String() string {
	if w.Field == "" {
		return w.Object + ": " + w.Message
	}
	return w.Object + ": " + w.Field + " " + w.Message
}

// Result is the converted objects, in input order, and the warnings.
type Result struct {
	// Objects are *nsv1.NodePool, *awsv1.EC2NodeClass, or, for documents
	// that are not Karpenter's, the input as *unstructured.Unstructured.
	Objects  []runtime.Object
	Warnings []Warning
}

// Options change what Convert writes; the zero value keeps every value it
// can.
type Options struct {
	// NodeRole, when set, is spec.role of every converted EC2NodeClass,
	// in place of Karpenter's node role or instance profile (a warning
	// names each replaced one).
	NodeRole string
}

// Convert reads multi-document YAML (or JSON) and converts every Karpenter
// NodePool and EC2NodeClass in it. It fails when a document cannot be read
// or converted; the error names every such document.
func Convert(r io.Reader) (*Result, error) { return ConvertWith(r, Options{}) }

// ConvertWith is Convert with options.
func ConvertWith(r io.Reader, opts Options) (*Result, error) {
	docs, err := splitDocuments(r)
	if err != nil {
		return nil, err
	}
	c := &converter{classes: map[string]*awsv1.EC2NodeClass{}, opts: opts}
	for i, doc := range docs {
		c.document(i+1, doc)
	}
	c.placeKubelet()
	if len(c.errs) > 0 {
		return nil, errors.Join(c.errs...)
	}
	return &Result{Objects: c.out, Warnings: c.warnings}, nil
}

// splitDocuments returns each non-empty document as a JSON object.
func splitDocuments(r io.Reader) ([]map[string]any, error) {
	rd := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var out []map[string]any
	for n := 1; ; n++ {
		b, err := rd.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading document %d: %w", n, err)
		}
		if len(bytes.TrimSpace(stripComments(b))) == 0 {
			continue
		}
		j, err := yaml.YAMLToJSON(b)
		if err != nil {
			return nil, fmt.Errorf("parsing document %d: %w", n, err)
		}
		var m map[string]any
		if err := json.Unmarshal(j, &m); err != nil {
			return nil, fmt.Errorf("document %d is not an object: %w", n, err)
		}
		if m == nil {
			continue
		}
		out = append(out, m)
	}
}

func stripComments(b []byte) []byte {
	var out []byte
	for _, line := range bytes.Split(b, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			out = append(out, t...)
		}
	}
	return out
}

// converter holds one Convert call's output and findings.
type converter struct {
	opts     Options
	out      []runtime.Object
	warnings []Warning
	errs     []error
	// current is the object being converted, as Kind/name.
	current string
	// classes are the converted node classes by name, for kubelet moves.
	classes map[string]*awsv1.EC2NodeClass
	// kubelet are the v1beta1 kubelet blocks of pools, to move into classes.
	kubelet []kubeletMove
}

func (c *converter) warn(field, msg string) {
	c.warnings = append(c.warnings, Warning{Object: c.current, Field: field, Message: msg})
}

func (c *converter) errorf(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf("%s: %s", c.current, fmt.Sprintf(format, args...)))
}

func (c *converter) document(n int, doc map[string]any) {
	apiVersion, _ := doc["apiVersion"].(string)
	kind, _ := doc["kind"].(string)
	group, version, _ := strings.Cut(apiVersion, "/")
	name := ""
	if md, ok := doc["metadata"].(map[string]any); ok {
		name, _ = md["name"].(string)
	}
	c.current = fmt.Sprintf("%s/%s", kind, name)
	if name == "" {
		c.current = fmt.Sprintf("%s (document %d)", kind, n)
	}
	switch {
	case strings.HasSuffix(kind, "List") && doc["items"] != nil:
		items, _ := doc["items"].([]any)
		for _, it := range items {
			if m, ok := it.(map[string]any); ok {
				c.document(n, m)
			}
		}
	case group == karpenterGroup && kind == "NodePool" && (version == "v1" || version == "v1beta1"):
		c.nodePool(doc)
	case group == karpenterAWSGroup && kind == "EC2NodeClass" && (version == "v1" || version == "v1beta1"):
		c.nodeClass(doc)
	case group == karpenterGroup && kind == "NodeClaim":
		c.warn("", "NodeClaims are made by the provisioner, not written by hand; skipped")
	case group == karpenterGroup && kind == "Provisioner", group == karpenterAWSGroup && kind == "AWSNodeTemplate":
		c.errorf("%s %s is older than v1beta1; upgrade it with Karpenter's own migration to v1beta1 or v1 first", apiVersion, kind)
	case group == karpenterGroup || group == karpenterAWSGroup:
		c.errorf("%s %s has no Nodesmith equivalent (convert takes NodePool and EC2NodeClass of v1beta1 and v1)", apiVersion, kind)
	default:
		c.warn("", "not a Karpenter NodePool or EC2NodeClass; passed through unchanged")
		c.out = append(c.out, &unstructured.Unstructured{Object: doc})
	}
}

// metadata converts an object's metadata: the name, labels and annotations
// stay; what the API server or Karpenter set is left out.
func (c *converter) metadata(f *fields) (name string, labels, annotations map[string]string) {
	if f == nil {
		c.errorf("metadata is missing")
		return "", nil, nil
	}
	name = f.str("name")
	if name == "" {
		c.errorf("metadata.name is missing")
	}
	f.decode("labels", &labels)
	var anns map[string]string
	f.decode("annotations", &anns)
	for k, v := range anns {
		switch k {
		case "kubectl.kubernetes.io/last-applied-configuration",
			karpenterGroup + "/nodepool-hash", karpenterGroup + "/nodepool-hash-version",
			karpenterAWSGroup + "/ec2nodeclass-hash", karpenterAWSGroup + "/ec2nodeclass-hash-version":
			continue // computed by kubectl or Karpenter; Nodesmith computes its own
		}
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[k] = v
	}
	f.ignore("namespace", "uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
		"deletionGracePeriodSeconds", "managedFields", "finalizers", "selfLink", "ownerReferences")
	f.done()
	return name, labels, annotations
}

var (
	_ runtime.Object = &nsv1.NodePool{}
	_ runtime.Object = &awsv1.EC2NodeClass{}
)
