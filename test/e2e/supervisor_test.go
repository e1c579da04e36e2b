package e2e

import (
	"sync"
	"testing"
	"time"

	"github.com/nodesmith/nodesmith/pkg/labkit"
)

// supervisor keeps the lab's controller running as a Deployment's
// ReplicaSet and kubelet would: when the process exits, it starts it again
// with the same flags, after a back-off that doubles from 1 s to 10 s (a
// kubelet's CrashLoopBackOff starts at 10 s; the lab is shorter so a step
// stays short, which only makes a crash loop more visible).
type supervisor struct {
	flags []string
	stopc chan struct{}
	done  chan struct{}

	mu    sync.Mutex
	exits []controllerExit
}

// controllerExit is one exit of a supervised controller process.
type controllerExit struct {
	at      time.Time
	err     string // how the process ended
	logTail string
}

// superviseController stops the lab's controller and runs one with the
// lab's flags plus flags under a supervisor.
func superviseController(t *testing.T, flags ...string) *supervisor {
	t.Helper()
	lab.controller.Stop()
	if err := lab.startController(flags...); err != nil {
		t.Fatal(err)
	}
	s := &supervisor{flags: flags, stopc: make(chan struct{}), done: make(chan struct{})}
	go s.run(lab.controller)
	return s
}

func (s *supervisor) run(p *labkit.Controller) {
	defer close(s.done)
	backoff := time.Second
	for {
		select {
		case <-s.stopc:
			return
		case <-p.Done():
		}
		e := controllerExit{at: time.Now(), logTail: p.Tail(15), err: p.Exit()}
		s.mu.Lock()
		s.exits = append(s.exits, e)
		s.mu.Unlock()
		select {
		case <-s.stopc:
			return
		case <-time.After(backoff):
		}
		if backoff *= 2; backoff > 10*time.Second {
			backoff = 10 * time.Second
		}
		np, err := lab.SpawnController(s.flags...)
		if err != nil {
			// Nothing to supervise; the step's waits fail with the log.
			return
		}
		lab.controller = np
		p = np
	}
}

// restarts are the exits seen so far.
func (s *supervisor) restarts() []controllerExit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]controllerExit(nil), s.exits...)
}

// stop ends supervision and the supervised process, then brings back the
// lab's own controller.
func (s *supervisor) stop(t *testing.T) {
	close(s.stopc)
	<-s.done
	lab.controller.Stop()
	if err := lab.startController(); err != nil {
		t.Error(err)
	}
}
