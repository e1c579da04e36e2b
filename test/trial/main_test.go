package trial

import (
	"os"
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

func TestMain(m *testing.M) {
	// The tests' clients log nothing worth reading; without a logger
	// controller-runtime prints a stack trace into the output.
	ctrllog.SetLogger(logr.Discard())
	os.Exit(m.Run())
}
