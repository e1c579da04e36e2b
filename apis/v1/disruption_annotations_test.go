package v1

import (
	"reflect"
	"testing"
)

func TestDisruptionReplacementsRoundTrip(t *testing.T) {
	for _, names := range [][]string{nil, {"a"}, {"general-1", "general-2", "spot-3"}} {
		c := &NodeClaim{}
		c.SetDisruptionReplacements(names)
		got := c.DisruptionReplacements()
		if len(names) == 0 {
			if got != nil {
				t.Errorf("no replacements: read back %q, want nil", got)
			}
			continue
		}
		if !reflect.DeepEqual(got, names) {
			t.Errorf("wrote %q, read back %q", names, got)
		}
	}
	if got := (&NodeClaim{}).DisruptionReplacements(); got != nil {
		t.Errorf("claim without annotations: %q, want nil", got)
	}
}
