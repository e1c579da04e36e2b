package fakeaws

import (
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
