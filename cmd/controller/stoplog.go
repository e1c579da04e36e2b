package main

import (
	"sync/atomic"

	"github.com/go-logr/logr"
)

// errLeaderElectionLost is the error controller-runtime's manager reports
// when its leader elector stops — also when the manager itself stopped it
// on a SIGTERM, where it is no error at all.
const errLeaderElectionLost = "leader election lost"

// stopAwareSink is the manager's log sink: once a graceful stop has begun,
// the manager's "leader election lost" is the elector it stopped itself,
// logged at info; before that it is a real loss and stays an error.
type stopAwareSink struct {
	logr.LogSink
	stopping *atomic.Bool
}

func (s stopAwareSink) Error(err error, msg string, kv ...any) {
	if s.stopping.Load() && err != nil && err.Error() == errLeaderElectionLost {
		s.LogSink.Info(0, "leader election stopped with the controller (graceful stop)", kv...)
		return
	}
	s.LogSink.Error(err, msg, kv...)
}

func (s stopAwareSink) WithValues(kv ...any) logr.LogSink {
	return stopAwareSink{LogSink: s.LogSink.WithValues(kv...), stopping: s.stopping}
}

func (s stopAwareSink) WithName(name string) logr.LogSink {
	return stopAwareSink{LogSink: s.LogSink.WithName(name), stopping: s.stopping}
}

// stopAware wraps l so that a graceful stop (stopping set) logs the
// manager's own end of leader election at info.
func stopAware(l logr.Logger, stopping *atomic.Bool) logr.Logger {
	return logr.New(stopAwareSink{LogSink: l.GetSink(), stopping: stopping})
}
