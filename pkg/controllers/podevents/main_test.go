package podevents

import (
	"os"
	"testing"

	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
)

var h *controllertest.Harness

func TestMain(m *testing.M) {
	os.Exit(controllertest.Main(m, func(harness *controllertest.Harness) { h = harness }))
}
