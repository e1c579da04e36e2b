package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/nodesmith/nodesmith/pkg/labkit"
)

// newLabRunCommand is the lab's own process, started by lab up: it runs
// the lab in the foreground until SIGTERM or SIGINT.
func newLabRunCommand() *cobra.Command {
	f := &labFlags{}
	cmd := &cobra.Command{
		Use:    "run",
		Short:  "Run the lab in the foreground (lab up starts it in the background)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return labRun(cmd.Context(), f)
		},
	}
	f.addDir(cmd)
	cmd.Flags().StringVar(&f.controller, "controller-binary", "", "a built cmd/controller (default: go build it from the checkout)")
	cmd.Flags().DurationVar(&f.bootDelay, "boot-delay", 5*time.Second, "how long a simulated instance takes to boot")
	return cmd
}

func labRun(ctx context.Context, f *labFlags) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	signal.Ignore(syscall.SIGHUP)
	ctrllog.SetLogger(logr.Discard())
	if err := os.MkdirAll(f.dir, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(f.dir, labkit.PIDFile), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		return err
	}
	log.Printf("starting the lab: control plane, KWOK, simulated AWS (%s, cluster %s, policy of examples/terraform), controller", labRegion, labCluster)
	bed, err := labkit.Start(ctx, labkit.Options{
		Cluster: labCluster, Region: labRegion, NodeRole: labNodeRole,
		BootDelay: f.bootDelay, Seed: 1, DefaultCapacity: 1000,
		EnforcePolicy:    true,
		ControllerBinary: f.controller,
		// Play a cluster that runs Karpenter today, for the migration
		// guide: its node role exists and its subnets and security groups
		// carry karpenter.sh/discovery.
		ExtraRoles:    []string{labKarpenterRole},
		KarpenterTags: true,
		// Karpenter NodePools applied to the lab are noticed in seconds,
		// not the default five minutes.
		ControllerFlags: []string{"--karpenter-check-interval=10s"},
	})
	if err != nil {
		return err
	}
	defer func() {
		log.Printf("stopping the lab")
		if err := bed.Stop(); err != nil {
			log.Printf("stopping the lab: %v", err)
		}
		for _, name := range []string{labkit.StateFile, labkit.KubeconfigFile, labkit.PIDFile} {
			_ = os.Remove(filepath.Join(f.dir, name))
		}
		log.Printf("the lab is down")
	}()
	kubeconfig, err := os.ReadFile(bed.Env.KubeconfigPath)
	if err != nil {
		return err
	}
	kcPath := filepath.Join(f.dir, labkit.KubeconfigFile)
	if err := os.WriteFile(kcPath, kubeconfig, 0o600); err != nil {
		return err
	}
	ctrl, err := bed.SpawnController()
	if err != nil {
		return err
	}
	st := labkit.State{PID: os.Getpid(), Started: time.Now(), Kubeconfig: kcPath, LogDir: bed.Env.Dir,
		ControllerLog: ctrl.LogPath, AWSURL: bed.AWSURL, Cluster: labCluster, Region: labRegion}
	if err := labkit.WriteState(f.dir, st); err != nil {
		return err
	}
	log.Printf("the lab is ready: kubeconfig %s, controller log %s", kcPath, ctrl.LogPath)
	superviseLabController(ctx, bed, ctrl)
	return nil
}

// superviseLabController restarts the controller when it exits, as its
// Deployment would, after a back-off doubling from 1 s to 30 s, until ctx
// is done.
func superviseLabController(ctx context.Context, bed *labkit.Lab, ctrl *labkit.Controller) {
	backoff := time.Second
	for {
		select {
		case <-ctx.Done():
			return
		case <-ctrl.Done():
		}
		log.Printf("the controller exited (%s); restarting in %s. Its log's end:\n%s", ctrl.Exit(), backoff, ctrl.Tail(15))
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
		next, err := bed.SpawnController()
		if err != nil {
			log.Printf("restarting the controller: %v", err)
			continue
		}
		ctrl = next
		fmt.Fprintf(os.Stderr, "controller restarted, log %s\n", ctrl.LogPath)
	}
}
