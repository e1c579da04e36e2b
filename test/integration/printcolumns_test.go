package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	v1 "github.com/nodesmith/nodesmith/apis/v1"
)

// TestPrinterColumns asks the API server for the Table that `kubectl get`
// prints (kubectl adds nothing but layout) and checks the columns and cells
// of a NodePool and a NodeClaim with status filled in.
func TestPrinterColumns(t *testing.T) {
	ctx := t.Context()
	np := validNodePool("columns")
	np.Spec.Weight = ptr[int32](10)
	np.Spec.Limits = v1.Limits{corev1.ResourceCPU: resource.MustParse("100")}
	if err := env.Client.Create(ctx, np); err != nil {
		t.Fatal(err)
	}
	np.Status = v1.NodePoolStatus{
		Nodes:      3,
		Resources:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("12"), corev1.ResourceMemory: resource.MustParse("48Gi")},
		Conditions: []metav1.Condition{readyCondition()},
	}
	if err := env.Client.Status().Update(ctx, np); err != nil {
		t.Fatalf("updating nodepool status: %v", err)
	}

	nc := validNodeClaim("columns-claim")
	if err := env.Client.Create(ctx, nc); err != nil {
		t.Fatal(err)
	}
	nc.Status = v1.NodeClaimStatus{
		InstanceType: "m6g.large",
		CapacityType: v1.CapacityTypeSpot,
		Zone:         "us-east-1b",
		NodeName:     "ip-10-0-1-23.ec2.internal",
		ProviderID:   "aws:///us-east-1b/i-0123456789abcdef0",
		Price:        "0.0342",
		Conditions:   []metav1.Condition{readyCondition()},
	}
	if err := env.Client.Status().Update(ctx, nc); err != nil {
		t.Fatalf("updating nodeclaim status: %v", err)
	}

	tests := []struct {
		name      string
		path      string
		columns   []string
		wantCells map[string]any // by column name; Age is checked for presence only
	}{
		{
			name:    "nodepools",
			path:    "/apis/nodesmith.sh/v1/nodepools/columns",
			columns: []string{"Name", "NodeClass", "Nodes", "Ready", "Weight", "CPU", "CPU Limit", "Replicas", "Age"},
			wantCells: map[string]any{
				"Name": "columns", "NodeClass": "default", "Nodes": float64(3), "Ready": "True",
				"Weight": float64(10), "CPU": "12", "CPU Limit": "100",
			},
		},
		{
			name:    "nodeclaims",
			path:    "/apis/nodesmith.sh/v1/nodeclaims/columns-claim",
			columns: []string{"Name", "Type", "Capacity", "Zone", "Price", "Node", "Ready", "Age", "ProviderID", "NodePool"},
			wantCells: map[string]any{
				"Name": "columns-claim", "Type": "m6g.large", "Capacity": "spot", "Zone": "us-east-1b", "Price": "0.0342",
				"Node": "ip-10-0-1-23.ec2.internal", "Ready": "True",
				"ProviderID": "aws:///us-east-1b/i-0123456789abcdef0", "NodePool": "default",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table := getTable(t, env.Config, tt.path)
			var names []string
			for _, c := range table.ColumnDefinitions {
				names = append(names, c.Name)
			}
			if !reflect.DeepEqual(names, tt.columns) {
				t.Fatalf("columns = %q, want %q", names, tt.columns)
			}
			if len(table.Rows) != 1 {
				t.Fatalf("rows = %d, want 1", len(table.Rows))
			}
			cells := table.Rows[0].Cells
			for i, name := range names {
				if name == "Age" {
					if s, _ := cells[i].(string); s == "" {
						t.Errorf("Age cell is empty")
					}
					continue
				}
				if want, ok := tt.wantCells[name]; ok && !reflect.DeepEqual(cells[i], want) {
					t.Errorf("%s = %#v, want %#v", name, cells[i], want)
				}
			}
		})
	}
}

func readyCondition() metav1.Condition {
	return metav1.Condition{Type: v1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Ready", Message: "", LastTransitionTime: metav1.Now()}
}

// getTable fetches path as a meta.k8s.io Table, the server-side rendering
// behind `kubectl get`.
func getTable(t *testing.T, cfg *rest.Config, path string) *metav1.Table {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, strings.TrimSuffix(cfg.Host, "/")+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s%s: %s: %s", cfg.Host, path, resp.Status, body)
	}
	table := &metav1.Table{}
	if err := json.Unmarshal(body, table); err != nil {
		t.Fatalf("decoding table: %v", err)
	}
	if table.Kind != "Table" {
		t.Fatalf("got %s, not a Table: %s", table.Kind, fmt.Sprint(string(body)[:min(len(body), 200)]))
	}
	return table
}
