package fakeaws_test

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodesmith/nodesmith/pkg/fakeaws"
)

// An AMI release publishes a new image behind every public parameter,
// created now, and repoints the parameter; the old images stay.
func TestReleaseImages(t *testing.T) {
	now := time.Date(2026, 1, 5, 12, 40, 0, 0, time.UTC)
	w := fakeaws.NewWorld(fakeaws.Options{Clock: clocktesting.NewFakeClock(now), Seed: 1})
	before := map[string]fakeaws.Image{}
	for _, img := range w.Images() {
		if img.SSMParameter != "" {
			before[img.SSMParameter] = img
		}
	}
	ids := w.ReleaseImages("v20260105")
	if len(ids) != len(before) || len(ids) == 0 {
		t.Fatalf("%d new images for %d parameters", len(ids), len(before))
	}
	after := w.Images()
	if len(after) != len(before)+len(ids) {
		t.Errorf("%d images after the release, want the %d old ones kept and %d new", len(after), len(before), len(ids))
	}
	fresh := map[string]fakeaws.Image{}
	for _, img := range after {
		fresh[img.ID] = img
	}
	for _, id := range ids {
		img, ok := fresh[id]
		old := before[img.SSMParameter]
		switch {
		case !ok:
			t.Errorf("new image %s not listed", id)
		case img.Arch != old.Arch || !img.CreationDate.Equal(now) || img.ID == old.ID:
			t.Errorf("new image %+v for %+v: want the same architecture, created now, a new id", img, old)
		case len(img.Name) < 9 || img.Name[len(img.Name)-9:] != "v20260105":
			t.Errorf("new image name %q does not end in the release", img.Name)
		}
	}
	if again := w.ReleaseImages("v20260105"); len(again) != len(ids) {
		t.Errorf("a second release replaced %d images, want %d (the current ones)", len(again), len(ids))
	}
}
