package labkit

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Controller is one cmd/controller process running against the lab.
type Controller struct {
	cmd *exec.Cmd
	// LogPath holds its stdout and stderr.
	LogPath string
	done    chan struct{}
}

// SpawnController starts one more controller process: the chart's command
// line, then what differs for a process on this machine (the kubeconfig
// impersonating the chart's ServiceAccount, the simulated AWS, no
// listeners, one replica), then Options.ControllerFlags, then extra (the
// last occurrence of a flag wins).
func (l *Lab) SpawnController(extra ...string) (*Controller, error) {
	logf, err := os.CreateTemp(l.Env.Dir, "controller-*.log")
	if err != nil {
		return nil, err
	}
	args := append(append([]string(nil), l.chartArgs...),
		"--kubeconfig="+l.kubeconfig,
		"--aws-region="+l.Opts.Region,
		"--aws-endpoint="+l.AWSURL,
		"--leader-elect=false",
		"--metrics-bind-address=0",
		"--health-probe-bind-address=0",
	)
	args = append(append(args, l.Opts.ControllerFlags...), extra...)
	cmd := exec.Command(l.binary, args...)
	cmd.Env = append(append(os.Environ(), l.chartEnv...), "AWS_ACCESS_KEY_ID=lab", "AWS_SECRET_ACCESS_KEY=lab", "AWS_EC2_METADATA_DISABLED=true")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting the controller: %w", err)
	}
	p := &Controller{cmd: cmd, LogPath: logf.Name(), done: make(chan struct{})}
	l.mu.Lock()
	l.controllers = append(l.controllers, p)
	l.mu.Unlock()
	go func() { _ = cmd.Wait(); logf.Close(); close(p.done) }()
	go l.watchRSS(p)
	return p, nil
}

// ControllerLogs are the logs of every controller process the lab ran, in
// order.
func (l *Lab) ControllerLogs() []string {
	l.mu.Lock()
	procs := append([]*Controller(nil), l.controllers...)
	l.mu.Unlock()
	var out []string
	for _, p := range procs {
		b, err := os.ReadFile(p.LogPath)
		if err != nil {
			continue
		}
		out = append(out, string(b))
	}
	return out
}

// watchRSS samples the process's high-water mark until it exits.
func (l *Lab) watchRSS(p *Controller) {
	for {
		if kib := ProcStatusKB(p.Pid(), "VmHWM"); kib > 0 {
			l.mu.Lock()
			l.peakRSSKiB = max(l.peakRSSKiB, kib)
			l.mu.Unlock()
		}
		select {
		case <-p.done:
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// PeakRSSMiB is the highest VmHWM seen over every controller process.
func (l *Lab) PeakRSSMiB() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return float64(l.peakRSSKiB) / 1024
}

// Done is closed when the process has exited.
func (p *Controller) Done() <-chan struct{} { return p.done }

// Pid is the process id.
func (p *Controller) Pid() int { return p.cmd.Process.Pid }

// Exit says how the process ended ("" while it runs).
func (p *Controller) Exit() string {
	select {
	case <-p.done:
		return p.cmd.ProcessState.String()
	default:
		return ""
	}
}

// Kill ends the controller at once (SIGKILL), as a crashed pod would.
func (p *Controller) Kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Stop ends the controller gracefully, killing it after 15 s.
func (p *Controller) Stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		p.Kill()
	}
}

// Tail is the last n lines of its log.
func (p *Controller) Tail(n int) string {
	if p == nil {
		return "(no controller running)"
	}
	return TailFile(p.LogPath, n)
}

// TailFile is the last n lines of a log file, for failure messages.
func TailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

var statusRE = map[string]*regexp.Regexp{
	"VmRSS": regexp.MustCompile(`VmRSS:\s+(\d+) kB`),
	"VmHWM": regexp.MustCompile(`VmHWM:\s+(\d+) kB`),
}

// ProcStatusKB reads a kB field (VmRSS or VmHWM) of /proc/<pid>/status; 0
// when it cannot.
func ProcStatusKB(pid int, field string) int64 {
	re, ok := statusRE[field]
	if !ok {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	m := re.FindSubmatch(b)
	if m == nil {
		return 0
	}
	n, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return n
}
