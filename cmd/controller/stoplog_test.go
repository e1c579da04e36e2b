package main

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr/funcr"
)

// TestGracefulStopLogsLeaderElectionAtInfo: after SIGTERM the manager's
// "leader election lost" is an info line; before it, an error.
func TestGracefulStopLogsLeaderElectionAtInfo(t *testing.T) {
	var lines []string
	base := funcr.New(func(prefix, args string) { lines = append(lines, prefix+" "+args) }, funcr.Options{})
	var stopping atomic.Bool
	log := stopAware(base, &stopping).WithName("manager").WithValues("k", "v")

	log.Error(errors.New(errLeaderElectionLost), "error received after stop sequence was engaged")
	stopping.Store(true)
	log.Error(errors.New(errLeaderElectionLost), "error received after stop sequence was engaged")
	log.Error(errors.New("informer failed"), "something else")
	if len(lines) != 3 {
		t.Fatalf("lines %q", lines)
	}
	if !strings.Contains(lines[0], `"error"`) || !strings.Contains(lines[0], errLeaderElectionLost) {
		t.Errorf("before the stop a lost election is an error: %s", lines[0])
	}
	if strings.Contains(lines[1], `"error"`) || !strings.Contains(lines[1], "graceful stop") || !strings.Contains(lines[1], `"k"="v"`) {
		t.Errorf("after SIGTERM: %s, want an info line keeping the logger's values", lines[1])
	}
	if !strings.Contains(lines[2], "informer failed") || !strings.Contains(lines[2], `"error"`) {
		t.Errorf("other errors stay errors: %s", lines[2])
	}
}
