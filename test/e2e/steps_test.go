package e2e

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"
)

// steps records the lab's steps as they run: the summary TestMain prints
// last, where CI shows the tail of a red run, and what the watchdog reports
// when a step is still running as go test's -timeout nears.
var steps = &stepLog{}

type stepLog struct {
	mu  sync.Mutex
	all []stepRecord
}

type stepRecord struct {
	name  string
	start time.Time
	dur   time.Duration
	// state is "running", "passed", "failed" or "not run".
	state string
}

func (s *stepLog) begin(name string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.all = append(s.all, stepRecord{name: name, start: at, state: "running"})
}

func (s *stepLog) end(name string, at time.Time, passed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.all {
		if r := &s.all[i]; r.name == name && r.state == "running" {
			r.dur, r.state = at.Sub(r.start), "failed"
			if passed {
				r.state = "passed"
			}
		}
	}
}

func (s *stepLog) skipped(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.all = append(s.all, stepRecord{name: name, state: "not run"})
}

// summary is a few lines: counts, the steps that failed, are running or
// were not run, and every step's time by its number.
func (s *stepLog) summary(now time.Time) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.all) == 0 {
		return "lab steps: none ran\n"
	}
	by := map[string][]string{}
	var times []string
	var total time.Duration
	for _, r := range s.all {
		d := r.dur
		if r.state == "running" {
			d = now.Sub(r.start)
		}
		total += d
		switch r.state {
		case "passed":
		case "not run":
			by[r.state] = append(by[r.state], r.name)
		default:
			by[r.state] = append(by[r.state], fmt.Sprintf("%s (%s)", r.name, d.Round(time.Second)))
		}
		if r.state != "not run" {
			id, _, _ := strings.Cut(r.name, "_")
			times = append(times, fmt.Sprintf("%s %.0fs", id, d.Seconds()))
		}
	}
	var b strings.Builder
	passed := len(s.all) - len(by["failed"]) - len(by["running"]) - len(by["not run"])
	fmt.Fprintf(&b, "lab steps: %d of %d passed in %s", passed, len(s.all), total.Round(time.Second))
	for _, state := range []string{"failed", "running", "not run"} {
		if len(by[state]) > 0 {
			fmt.Fprintf(&b, "; %s: %s", state, strings.Join(by[state], ", "))
		}
	}
	fmt.Fprintf(&b, "\nlab step times: %s\n", strings.Join(times, " · "))
	return b.String()
}

// testTimeout is go test's -timeout (0: none). The testing package starts
// its alarm when m.Run begins, after the lab is up.
func testTimeout() time.Duration {
	f := flag.Lookup("test.timeout")
	if f == nil {
		return 0
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return 0
	}
	d, _ := g.Get().(time.Duration)
	return d
}

// watchdogMargin is how long before go test's -timeout the watchdog ends
// the lab: enough to print what the running step is waiting for, stop the
// lab's processes (a timeout panic would orphan them) and print the
// summary, which a timeout's goroutine dump would otherwise bury.
const watchdogMargin = 2 * time.Minute

// startWatchdog ends the lab at deadline if it is still running: it prints
// the stacks of this package's goroutines (where the running step waits),
// the controller's log tail and the step summary, stops the lab and exits
// 1. The returned func disarms it.
func startWatchdog(l *Lab, deadline time.Time) (disarm func()) {
	t := time.AfterFunc(time.Until(deadline), func() {
		fmt.Fprintf(os.Stderr, "\nFAIL: lab watchdog: go test's -timeout is %s away; ending the lab\n", watchdogMargin)
		fmt.Fprintf(os.Stderr, "the lab's goroutines (test/e2e frames):\n%s", labStacks())
		if l.controller != nil {
			fmt.Fprintf(os.Stderr, "controller log tail:\n%s\n", l.controller.Tail(20))
		}
		stopped := make(chan error, 1)
		go func() { stopped <- l.Stop() }()
		select {
		case err := <-stopped:
			if err != nil {
				fmt.Fprintf(os.Stderr, "stopping the lab: %v\n", err)
			}
		case <-time.After(time.Minute):
			fmt.Fprintln(os.Stderr, "stopping the lab: still stopping after 1m; exiting")
		}
		fmt.Fprintf(os.Stderr, "%sFAIL: lab watchdog ended the lab with a step still running\n", steps.summary(time.Now()))
		os.Exit(1)
	})
	return func() { t.Stop() }
}

// labStacks is every goroutine that runs this package's code, cut to its
// test/e2e frames: where each step is waiting.
func labStacks() string {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var b strings.Builder
	for _, g := range strings.Split(string(buf), "\n\n") {
		lines := strings.Split(g, "\n")
		if len(lines) == 0 || strings.Contains(g, "startWatchdog") || strings.Contains(g, "labStacks") {
			continue
		}
		var frames []string
		for i := 1; i+1 < len(lines); i += 2 {
			if strings.Contains(lines[i], "/test/e2e.") {
				loc := strings.Fields(lines[i+1])
				if len(loc) > 0 {
					frames = append(frames, strings.TrimSpace(lines[i])+" "+loc[0])
				}
			}
		}
		if len(frames) > 0 {
			fmt.Fprintf(&b, "%s\n\t%s\n", lines[0], strings.Join(frames, "\n\t"))
		}
	}
	return b.String()
}
