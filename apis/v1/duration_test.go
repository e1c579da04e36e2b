package v1

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestNillableDurationJSON(t *testing.T) {
	tests := []struct {
		name      string
		in        string // JSON
		wantNever bool
		want      time.Duration
		wantOut   string // what it marshals back to
		wantErr   string
	}{
		{name: "hours", in: `"720h"`, want: 720 * time.Hour, wantOut: `"720h"`},
		{name: "compound kept as written", in: `"1h30m"`, want: 90 * time.Minute, wantOut: `"1h30m"`},
		{name: "zero seconds", in: `"0s"`, want: 0, wantOut: `"0s"`},
		{name: "never", in: `"Never"`, wantNever: true, wantOut: `"Never"`},
		{name: "not a duration", in: `"soon"`, wantErr: `parsing duration "soon"`},
		{name: "a number", in: `720`, wantErr: "duration must be a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d NillableDuration
			err := json.Unmarshal([]byte(tt.in), &d)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.IsNever() != tt.wantNever {
				t.Errorf("IsNever = %v, want %v", d.IsNever(), tt.wantNever)
			}
			if !tt.wantNever && (d.Duration == nil || *d.Duration != tt.want) {
				t.Errorf("Duration = %v, want %v", d.Duration, tt.want)
			}
			out, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tt.wantOut {
				t.Errorf("marshalled %s, want %s", out, tt.wantOut)
			}
			if s, _ := d.ToUnstructured().(string); `"`+s+`"` != tt.wantOut {
				t.Errorf("ToUnstructured = %v, want %s", d.ToUnstructured(), tt.wantOut)
			}
		})
	}
}

// A duration built in Go (no raw text) marshals from its value.
func TestNillableDurationFromValue(t *testing.T) {
	h := 2 * time.Hour
	tests := []struct {
		name string
		d    NillableDuration
		want string
	}{
		{"value", NillableDuration{Duration: &h}, `"2h0m0s"`},
		{"never", NillableDuration{}, `"Never"`},
		{"parsed", MustParseNillableDuration("15m"), `"15m"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := json.Marshal(tt.d)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tt.want {
				t.Errorf("marshalled %s, want %s", out, tt.want)
			}
		})
	}
}

// The zero value is left out of objects so the API server's default (720h
// for expireAfter, 0s for consolidateAfter) applies; a set value is kept.
func TestNillableDurationOmitZero(t *testing.T) {
	tests := []struct {
		name string
		spec NodeClaimTemplateSpec
		want string // substring expected, or "" for absent
	}{
		{"zero value omitted", NodeClaimTemplateSpec{}, ""},
		{"never kept", NodeClaimTemplateSpec{ExpireAfter: MustParseNillableDuration(Never)}, `"expireAfter":"Never"`},
		{"duration kept", NodeClaimTemplateSpec{ExpireAfter: MustParseNillableDuration("24h")}, `"expireAfter":"24h"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := json.Marshal(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			has := strings.Contains(string(out), `"expireAfter"`)
			switch {
			case tt.want == "" && has:
				t.Errorf("%s: want expireAfter left out", out)
			case tt.want != "" && !strings.Contains(string(out), tt.want):
				t.Errorf("%s: want %s", out, tt.want)
			}
			if !tt.spec.ExpireAfter.IsZero() == (tt.want == "") {
				t.Errorf("IsZero = %v", tt.spec.ExpireAfter.IsZero())
			}
		})
	}
}
