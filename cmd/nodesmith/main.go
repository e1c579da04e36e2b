// Command nodesmith is Nodesmith's command-line tool: simulate replays a
// scenario through the product's own decision code in virtual time;
// convert turns Karpenter manifests into Nodesmith's; snapshot, plan and
// explain answer what Nodesmith would launch for a cluster and why a pod or
// a node is where it is, from a kubeconfig or a snapshot file; lab runs the
// local test bed (pkg/labkit) in the background to try it all without AWS.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/nodesmith/nodesmith/pkg/version"
)

func main() {
	if err := newRootCommand(os.Stdout, os.Stderr).Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "nodesmith:", err)
		os.Exit(1)
	}
}

func newRootCommand(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "nodesmith",
		Short: "Just-in-time node provisioning for Kubernetes on AWS",
		Long: `nodesmith is the command-line tool of Nodesmith, just-in-time node provisioning
for Kubernetes on AWS with spot diversification.

  simulate   replay a scenario in virtual time (no cluster, no AWS account)
  convert    turn Karpenter NodePools and EC2NodeClasses into Nodesmith's
  snapshot   save what a cluster runs to a file plan and explain can read
  plan       what Nodesmith would launch for a cluster's pods, and its $/h
  explain    why a pod is pending or placed; where a node stands on removal
  lab        try Nodesmith locally: lab up starts a control plane, KWOK nodes,
             a simulated AWS and the controller in the background; lab down
  completion shell completion for bash, zsh, fish and powershell

plan and explain read a cluster through your kubeconfig (or --snapshot FILE)
and decide with the controller's own code and the embedded us-east-1
instance catalog; they change nothing.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.Get().String(),
	}
	root.SetVersionTemplate("nodesmith {{.Version}}\n")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newSimulateCommand(), newConvertCommand(), newSnapshotCommand(), newPlanCommand(), newExplainCommand(), newLabCommand())
	return root
}
