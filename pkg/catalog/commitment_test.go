package catalog

import (
	"fmt"
	"math"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodesmith/nodesmith/apis/v1alpha1"
)

func TestLedger(t *testing.T) {
	compute := Commitment{Name: "compute", Type: v1alpha1.CommitmentComputeSavingsPlan, Hourly: 1}
	m5 := Commitment{Name: "m5-ri", Type: v1alpha1.CommitmentReservedInstance, Family: "m5", Region: "us-east-1", Hourly: 0.5}
	type charge struct {
		family string
		price  float64
	}
	tests := []struct {
		name    string
		cs      []Commitment
		charges []charge
		// want: per charge "covered", then the marginal price of one more
		// m5 at 0.4 and c6g at 0.4.
		want string
	}{
		{"none", nil, []charge{{"m5", 0.4}}, "0.00 | m5 0.40 c6g 0.40"},
		{"compute covers any family until used up", []Commitment{compute}, []charge{{"m5", 0.4}, {"c6g", 0.4}, {"c6g", 0.4}},
			"0.40 0.40 0.20 | m5 0.40 c6g 0.40"},
		{"scoped first, then compute", []Commitment{compute, m5}, []charge{{"m5", 0.4}, {"m5", 0.4}},
			"0.40 0.40 | m5 0.00 c6g 0.00"},
		{"scoped covers only its family", []Commitment{m5}, []charge{{"c6g", 0.4}, {"m5", 0.4}},
			"0.00 0.40 | m5 0.30 c6g 0.40"},
		{"partly left: marginal is the uncovered part", []Commitment{{Name: "c", Hourly: 0.5}}, []charge{{"m5", 0.3}},
			"0.30 | m5 0.20 c6g 0.20"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLedger(tt.cs)
			var got []string
			for _, c := range tt.charges {
				got = append(got, fmt.Sprintf("%.2f", l.Charge(c.family, "us-east-1", c.price)))
			}
			g := strings.Join(got, " ") + fmt.Sprintf(" | m5 %.2f c6g %.2f", l.Marginal("m5", "us-east-1", 0.4), l.Marginal("c6g", "us-east-1", 0.4))
			if g != tt.want {
				t.Errorf("got %s, want %s", g, tt.want)
			}
		})
	}
	// A family commitment of another region covers nothing here.
	l := NewLedger([]Commitment{{Name: "w", Family: "m5", Region: "eu-west-1", Hourly: 5}})
	if got := l.Charge("m5", "us-east-1", 0.4); got != 0 {
		t.Errorf("eu-west-1 commitment covered %.2f in us-east-1", got)
	}
	if got := l.Marginal("m5", "eu-west-1", 0.4); math.Abs(got) > 1e-12 {
		t.Errorf("marginal in its own region %.2f, want 0", got)
	}
}

func TestCommitmentFrom(t *testing.T) {
	tests := []struct {
		name    string
		spec    v1alpha1.CommitmentSpec
		wantErr string
	}{
		{"compute", v1alpha1.CommitmentSpec{Type: v1alpha1.CommitmentComputeSavingsPlan, HourlyCommitment: "2.5"}, ""},
		{"ri", v1alpha1.CommitmentSpec{Type: v1alpha1.CommitmentReservedInstance, HourlyCommitment: "1", Family: "m5", Region: "us-east-1"}, ""},
		{"ri without family", v1alpha1.CommitmentSpec{Type: v1alpha1.CommitmentReservedInstance, HourlyCommitment: "1"}, "needs family and region"},
		{"zero", v1alpha1.CommitmentSpec{Type: v1alpha1.CommitmentComputeSavingsPlan, HourlyCommitment: "0"}, `"0"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := CommitmentFrom(&v1alpha1.Commitment{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: tt.spec})
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("err %v, want %q", err, tt.wantErr)
			}
		})
	}
}
