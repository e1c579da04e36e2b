package main

import (
	"github.com/spf13/cobra"
)

func newSnapshotCommand() *cobra.Command {
	var out *outputFlag
	var cluster *clusterFlags
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Save a cluster's pods, nodes, NodeClaims, NodePools, EC2NodeClasses, DaemonSets and PDBs to one file",
		Long: `snapshot reads, through your kubeconfig, everything plan and explain decide
from — pods, nodes, NodeClaims, NodePools, EC2NodeClasses, DaemonSets and
PodDisruptionBudgets — and writes it as one YAML (or JSON) document to
stdout. Read-only; managed fields and node image lists are left out.

A cluster without Nodesmith's CRDs (say one that runs Karpenter) is read all
the same, with a warning; plan --nodepools then brings the pools.

The controller's insufficient-capacity cache lives in its memory, not in the
cluster: add unavailableOfferings entries to the file (or pass --unavailable
to plan and explain) to ask what happens when offerings run dry.`,
		Example: `  nodesmith snapshot > cluster.yaml
  nodesmith snapshot --context prod -o json > prod.json
  nodesmith plan --snapshot cluster.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := out.check(); err != nil {
				return err
			}
			snap, err := cluster.load(cmd.Context(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			return writeData(cmd.OutOrStdout(), out.value, snap)
		},
	}
	cluster = addClusterFlags(cmd, false)
	out = addOutputFlag(cmd, outYAML, outYAML, outJSON)
	return cmd
}
