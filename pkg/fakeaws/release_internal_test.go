package fakeaws

import (
	"slices"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// After a release every public parameter names its new image.
func TestReleaseImagesRepointsParameters(t *testing.T) {
	w := NewWorld(Options{Clock: clocktesting.NewFakeClock(time.Date(2026, 1, 5, 12, 40, 0, 0, time.UTC)), Seed: 1})
	ids := w.ReleaseImages("v20260105")
	byID := map[string]Image{}
	for _, img := range w.Images() {
		byID[img.ID] = img
	}
	for _, id := range ids {
		img := byID[id]
		if got, ok := w.parameter(img.SSMParameter); !ok || got != id {
			t.Errorf("parameter %s = %q, want the new image %s", img.SSMParameter, got, id)
		}
	}
}

func TestPreviousVersions(t *testing.T) {
	for _, tt := range []struct {
		v    string
		want []string
	}{{"1.37", []string{"1.36", "1.35"}}, {"1.1", []string{"1.0"}}, {"1.0", nil}, {"1.37.2", nil}, {"latest", nil}} {
		if got := previousVersions(tt.v, 2); !slices.Equal(got, tt.want) {
			t.Errorf("previousVersions(%q) = %v, want %v", tt.v, got, tt.want)
		}
	}
}
