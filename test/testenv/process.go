package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Process is a control-plane component (kube-scheduler,
// kube-controller-manager, KWOK, the controller…) running next to the test
// apiserver. Its output goes to LogPath.
type Process struct {
	Name    string
	LogPath string

	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// StartScheduler runs kube-scheduler against the test apiserver without
// leader election or a serving port (tests never scrape it).
func (e *Env) StartScheduler(ctx context.Context, extra ...string) (*Process, error) {
	args := append([]string{
		"--kubeconfig=" + e.KubeconfigPath,
		"--leader-elect=false",
		"--secure-port=0",
	}, extra...)
	return e.StartControlPlaneComponent(ctx, "kube-scheduler", args...)
}

// StartControllerManager runs kube-controller-manager against the test
// apiserver: it creates default ServiceAccounts, runs Deployments and
// ReplicaSets, finishes namespace deletion, and its node lifecycle controller
// removes the not-ready taint once a Node reports Ready. The token and node
// IPAM controllers are off: envtest has no service-account signing for them
// to use and the lab's Nodes bring their own pod CIDRs.
func (e *Env) StartControllerManager(ctx context.Context, extra ...string) (*Process, error) {
	args := append([]string{
		"--kubeconfig=" + e.KubeconfigPath,
		"--leader-elect=false",
		"--secure-port=0",
		"--controllers=*,-serviceaccount-token,-nodeipam",
		"--use-service-account-credentials=false",
	}, extra...)
	return e.StartControlPlaneComponent(ctx, "kube-controller-manager", args...)
}

// StartControlPlaneComponent runs name (a binary in AssetsDir, or an absolute
// path) with args. The process ends when ctx is done, when Process.Stop is
// called, or at the latest when Env.Stop runs. It fails when the process
// exits within its first second, with the tail of its log.
func (e *Env) StartControlPlaneComponent(ctx context.Context, name string, args ...string) (*Process, error) {
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(e.AssetsDir, name)
	}
	if err := executable(path); err != nil {
		return nil, fmt.Errorf("%s not found at %s (run make tools): %w", name, path, err)
	}
	base := filepath.Base(path)
	logf, err := os.CreateTemp(e.Dir, base+"-*.log")
	if err != nil {
		return nil, fmt.Errorf("creating the log of %s: %w", base, err)
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// A test binary killed by `go test -timeout` must not leave a scheduler
	// writing to a dead apiserver's port forever.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting %s: %w", base, err)
	}
	p := &Process{Name: base, LogPath: logf.Name(), cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	go func() {
		select {
		case <-ctx.Done():
			_ = p.Stop()
		case <-p.done:
		}
	}()

	select {
	case <-p.done:
		return nil, fmt.Errorf("%s exited at start (%v): %s", base, p.err, p.LogTail(20))
	case <-time.After(time.Second):
	}
	e.mu.Lock()
	e.procs = append(e.procs, p)
	e.mu.Unlock()
	return p, nil
}

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Stop asks the process to end (SIGTERM) and kills it after 10 s.
func (p *Process) Stop() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	var exit *exec.ExitError
	if p.err != nil && !errors.As(p.err, &exit) {
		return fmt.Errorf("stopping %s: %w", p.Name, p.err)
	}
	return nil
}

// LogTail returns the last n lines of the process's output, for failure messages.
func (p *Process) LogTail(n int) string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
