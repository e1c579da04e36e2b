package testenv

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// apiserverLog is kube-apiserver's output, in its certificate folder.
const apiserverLog = "kube-apiserver.log"

// StopAPIServer stops kube-apiserver and waits until it has exited and
// its port is closed; etcd and every process started through Env keep
// running, cut off from the API until StartAPIServer. It asks first
// (SIGTERM, as a rolling control-plane upgrade does) and kills it (SIGKILL,
// as a crashed node would) if it is still running after grace: with clients
// connected, a graceful shutdown can wait the full request timeout (60 s)
// for in-flight requests, longer than a test wants to wait. killed says
// which it took.
func (e *Env) StopAPIServer(grace time.Duration) (killed bool, err error) {
	s := e.env.ControlPlane.APIServer
	addr := net.JoinHostPort(s.SecureServing.ListenAddr.Address, s.SecureServing.ListenAddr.Port)
	pid, err := e.apiserverPID()
	if err != nil {
		return false, err
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return false, fmt.Errorf("signalling kube-apiserver: %w", err)
	}
	if !waitGone(pid, grace) {
		killed = true
		_ = syscall.Kill(pid, syscall.SIGKILL)
		if !waitGone(pid, 10*time.Second) {
			return true, fmt.Errorf("kube-apiserver (pid %d) still running 10 s after SIGKILL", pid)
		}
	}
	// envtest reaps the process and forgets it, so Start runs a new one.
	if err := s.Stop(); err != nil {
		return killed, fmt.Errorf("stopping kube-apiserver: %w", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return killed, nil
		}
		_ = c.Close()
		if time.Now().After(deadline) {
			return killed, fmt.Errorf("something still listens on kube-apiserver's %s 30 s after it exited", addr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// apiserverPID finds kube-apiserver by its certificate folder, which the
// Env made and no other process names (envtest does not expose the pid).
func (e *Env) apiserverPID() (int, error) {
	procs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		return 0, err
	}
	want := "--cert-dir=" + e.certDir
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, arg := range strings.Split(string(b), "\x00") {
			if arg == want {
				return strconv.Atoi(filepath.Base(filepath.Dir(p)))
			}
		}
	}
	return 0, fmt.Errorf("no kube-apiserver process with %s", want)
}

// waitGone waits up to d for pid to exit (or become a zombie, which its
// parent, envtest, reaps).
func waitGone(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return true
		}
		// The state follows the parenthesised command name.
		if i := strings.LastIndexByte(string(b), ')'); i > 0 && i+2 < len(b) && b[i+2] == 'Z' {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// StartAPIServer starts kube-apiserver again on the same port, with the same
// flags, certificates, client CA and etcd, and waits until it reports healthy.
func (e *Env) StartAPIServer() error {
	if err := e.env.ControlPlane.APIServer.Start(); err != nil {
		return fmt.Errorf("starting kube-apiserver again: %w\n%s", err, e.APIServerLogTail(20))
	}
	return nil
}

// APIServerLogTail returns the last n lines of kube-apiserver's output.
func (e *Env) APIServerLogTail(n int) string {
	b, err := os.ReadFile(filepath.Join(e.certDir, apiserverLog))
	if err != nil {
		return fmt.Sprintf("(no apiserver log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Exited lists the processes started through Env that have exited, with
// their log tails, sorted by name.
func (e *Env) Exited() []string {
	e.mu.Lock()
	procs := append([]*Process(nil), e.procs...)
	e.mu.Unlock()
	var out []string
	for _, p := range procs {
		select {
		case <-p.done:
			out = append(out, fmt.Sprintf("%s (%v): %s", p.Name, p.err, p.LogTail(5)))
		default:
		}
	}
	sort.Strings(out)
	return out
}
