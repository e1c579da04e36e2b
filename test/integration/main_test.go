package integration

import (
	"os"
	"testing"

	"github.com/nodesmith/nodesmith/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, testenv.Options{}, func(e *testenv.Env) error {
		env = e
		return nil
	}))
}
