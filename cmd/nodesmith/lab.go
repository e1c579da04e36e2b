package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodesmith/nodesmith/pkg/labkit"
	"github.com/nodesmith/nodesmith/test/testenv"
)

// The background lab plays a cluster named like the examples' discovery
// tags and node role, so examples/*.yaml apply unchanged.
const (
	labCluster  = "my-cluster"
	labRegion   = "us-east-1"
	labNodeRole = "NodesmithNodeRole-my-cluster"
	// labKarpenterRole is the node role of a cluster that runs Karpenter
	// (docs/migrate-from-karpenter.md).
	labKarpenterRole = "KarpenterNodeRole-my-cluster"
)

// labFlags are the flags lab up, down and run share.
type labFlags struct {
	dir        string
	controller string
	bootDelay  time.Duration
	wait       time.Duration
}

func defaultLabDir() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "nodesmith-lab")
	}
	return filepath.Join(home, ".nodesmith", "lab")
}

func (f *labFlags) addDir(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.dir, "dir", defaultLabDir(), "the lab's state folder (pid, kubeconfig, logs)")
}

func newLabCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "Try Nodesmith locally: a real control plane, KWOK nodes and a simulated AWS",
		Long: `lab runs, on this machine and in the background, the test bed Nodesmith's own
end-to-end tests use: a real kube-apiserver and etcd, kube-scheduler and
kube-controller-manager, KWOK playing the kubelet of every node, a simulated
AWS (EC2, IAM, SSM, SQS on loopback; region us-east-1, cluster my-cluster)
that authorizes every call against examples/terraform's controller policy,
and the Nodesmith controller run with the Helm chart's command line and RBAC.
Nodes appear when the controller launches simulated instances; no AWS account
and no container runtime are needed.

The control-plane binaries are built from source once by tools/build.sh;
run lab from a Nodesmith checkout (the controller is built from it).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newLabUpCommand(), newLabDownCommand(), newLabRunCommand())
	return cmd
}

func newLabUpCommand() *cobra.Command {
	f := &labFlags{}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start the lab in the background and print how to use it",
		Example: `  nodesmith lab up
  export KUBECONFIG=~/.nodesmith/lab/kubeconfig
  kubectl apply -f examples/spot-fleet.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return labUp(cmd.OutOrStdout(), f)
		},
	}
	f.addDir(cmd)
	cmd.Flags().StringVar(&f.controller, "controller-binary", "", "a built cmd/controller (default: go build it from the checkout)")
	cmd.Flags().DurationVar(&f.bootDelay, "boot-delay", 5*time.Second, "how long a simulated instance takes to boot")
	cmd.Flags().DurationVar(&f.wait, "wait", 10*time.Minute, "how long to wait for the lab to be ready")
	return cmd
}

func newLabDownCommand() *cobra.Command {
	f := &labFlags{}
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop the lab and remove its state folder",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return labDown(cmd.OutOrStdout(), f.dir)
		},
	}
	f.addDir(cmd)
	return cmd
}

// labUp starts `nodesmith lab run` as a session of its own, its output in
// the state folder, and waits until it has written its state (ready) or
// exited (failed).
func labUp(out io.Writer, f *labFlags) error {
	if pid, alive, err := labkit.ReadPID(f.dir); err != nil {
		return err
	} else if alive {
		fmt.Fprintf(out, "The lab is already running (pid %d, state in %s).\n", pid, f.dir)
		if st, err := labkit.ReadState(f.dir); err == nil {
			fmt.Fprintf(out, "\n  export KUBECONFIG=%s\n", st.Kubeconfig)
		}
		fmt.Fprintln(out, "\nnodesmith lab down stops it.")
		return nil
	}
	if err := labkit.CheckTools(f.controller == ""); err != nil {
		return err
	}
	// A lab that died without lab down left its files; start afresh.
	if err := os.RemoveAll(f.dir); err != nil {
		return err
	}
	if err := os.MkdirAll(f.dir, 0o700); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the nodesmith binary: %w", err)
	}
	logf, err := os.OpenFile(filepath.Join(f.dir, labkit.LogFile), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	args := []string{"lab", "run", "--dir", f.dir, "--boot-delay", f.bootDelay.String()}
	if f.controller != "" {
		abs, err := filepath.Abs(f.controller)
		if err != nil {
			return err
		}
		args = append(args, "--controller-binary", abs)
	}
	run := exec.Command(self, args...)
	run.Stdout, run.Stderr = logf, logf
	run.Dir = testenv.RepoRoot()
	// Its own session: the lab outlives this command and the terminal, and
	// lab down finds every process of it by the session.
	run.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := run.Start(); err != nil {
		return fmt.Errorf("starting the lab: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- run.Wait() }()
	fmt.Fprintf(out, "Starting the lab (pid %d; its log: %s) ...\n", run.Process.Pid, logf.Name())
	deadline := time.After(f.wait)
	for {
		st, err := labkit.ReadState(f.dir)
		if err == nil {
			printLabHelp(out, st)
			return nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return err
		}
		select {
		case err := <-exited:
			return fmt.Errorf("the lab exited before it was ready (%v); the end of %s:\n%s", err, logf.Name(), labkit.TailFile(logf.Name(), 25))
		case <-deadline:
			_ = stopSession(run.Process.Pid, 30*time.Second)
			return fmt.Errorf("the lab was not ready after %s and was stopped; the end of %s:\n%s", f.wait, logf.Name(), labkit.TailFile(logf.Name(), 25))
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func printLabHelp(out io.Writer, st labkit.State) {
	root := testenv.RepoRoot()
	fmt.Fprintf(out, `
The lab is up (pid %d): kube-apiserver, etcd, kube-scheduler,
kube-controller-manager, KWOK, a simulated AWS (%s, cluster %s) that
enforces examples/terraform's controller policy, and the Nodesmith
controller with the Helm chart's RBAC.

  export KUBECONFIG=%s

Give Nodesmith a NodePool and its EC2NodeClass, then something to run:

  kubectl apply -f %s
  kubectl create deployment web --image=registry.k8s.io/pause:3.10 --replicas=0
  kubectl set resources deployment web --requests=cpu=500m,memory=256Mi
  kubectl scale deployment web --replicas=12

Watch it launch, then ask why:

  kubectl get nodepools,nodeclaims,nodes
  nodesmith explain pod default/$(kubectl get pods -o name | head -1 | cut -d/ -f2)
  nodesmith explain node $(kubectl get nodeclaims -o jsonpath='{.items[0].status.nodeName}')
  nodesmith plan

examples/default-nodepool.yaml is a second pool to try. Logs (controller,
control plane, KWOK): %s
Stop and clean up: nodesmith lab down
`, st.PID, st.Region, st.Cluster, st.Kubeconfig, filepath.Join(root, "examples", "spot-fleet.yaml"), st.LogDir)
}

// labDown stops the lab's process (it stops what it started), then any
// process of its session still there, and removes the state folder.
func labDown(out io.Writer, dir string) error {
	pid, alive, err := labkit.ReadPID(dir)
	if err != nil {
		return err
	}
	if pid == 0 {
		fmt.Fprintf(out, "No lab is running (no %s in %s).\n", labkit.PIDFile, dir)
		return os.RemoveAll(dir)
	}
	if alive {
		if err := stopSession(pid, time.Minute); err != nil {
			return err
		}
	} else if err := killSession(pid); err != nil { // its processes may outlive a killed leader
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	fmt.Fprintf(out, "The lab is down (pid %d stopped; %s removed).\n", pid, dir)
	return nil
}

// stopSession asks the lab's process to stop (SIGTERM), waits up to
// timeout for it to exit, then kills whatever of its session is left.
func stopSession(pid int, timeout time.Duration) error {
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(timeout)
	for labkit.Alive(pid) && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	return killSession(pid)
}

// killSession sends SIGKILL to every process left in session sid and
// waits until none is.
func killSession(sid int) error {
	for range 50 {
		left, err := labkit.SessionProcesses(sid)
		if err != nil {
			return err
		}
		if len(left) == 0 {
			return nil
		}
		for _, p := range left {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
	left, _ := labkit.SessionProcesses(sid)
	return fmt.Errorf("processes %v of the lab (session %d) do not exit", left, sid)
}
