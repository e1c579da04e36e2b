package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/nodesmith/nodesmith/pkg/whatif"
)

func newPlanCommand() *cobra.Command {
	var (
		out       *outputFlag
		cluster   *clusterFlags
		nodepools string
		pending   bool
	)
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "What Nodesmith would launch for the cluster's pods, its $/h against today's nodes, and the lower bound",
		Long: `plan runs the controller's own gather and solver over a cluster (through
your kubeconfig, or a file written by nodesmith snapshot) with the embedded
us-east-1 instance catalog, and prints:

  - the nodes Nodesmith would launch, by NodePool, capacity type and
    instance type, at their cheapest offering;
  - a lower bound on the $/h of any set of nodes of the pools' types that
    holds the same pods (the solver's packing LP);
  - what runs today: Nodesmith's NodeClaims at what they cost now (the
    figures of the nodesmith_cost_dollars_per_hour metric) and other nodes
    priced from the catalog by their instance type and capacity type labels;
  - the pods it cannot place, with the solver's reason, and pools it left out.

By default every workload pod (not DaemonSet, static or finished pods) is
planned onto new nodes, as if the cluster were empty: what Nodesmith would run
it on today. --pending plans only the pending pods, onto existing nodes first,
as the provisioner's next cycle would.

--nodepools FILE plans with the NodePools and EC2NodeClasses of FILE instead of
the cluster's; Karpenter manifests are converted first. EC2NodeClasses whose
subnets are not resolved get the catalog's six us-east-1 zones.`,
		Example: `  # what would Nodesmith run this cluster on, with its NodePools?
  nodesmith plan

  # try your Karpenter pools on a cluster before installing anything
  nodesmith plan --nodepools karpenter.yaml

  # from a saved snapshot, only the pending pods, as JSON
  nodesmith plan --snapshot cluster.yaml --pending -o json

  # and if m5.large spot ran dry in every zone?
  nodesmith plan --snapshot cluster.yaml --unavailable 'm5.large:*:spot'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := out.check(); err != nil {
				return err
			}
			snap, err := cluster.load(cmd.Context(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if nodepools != "" {
				fh, err := os.Open(nodepools)
				if err != nil {
					return err
				}
				defer fh.Close()
				warnings, err := whatif.ReplaceNodePools(snap, fh)
				if err != nil {
					return fmt.Errorf("%s: %w", nodepools, err)
				}
				for _, w := range warnings {
					fmt.Fprintln(cmd.ErrOrStderr(), "warning:", w)
				}
			}
			mode := whatif.ModeRepack
			if pending {
				mode = whatif.ModePending
			}
			r, err := whatif.Plan(snap, mode, whatif.Options{})
			if err != nil {
				return err
			}
			if out.value != outTable {
				return writeData(cmd.OutOrStdout(), out.value, r)
			}
			writePlan(cmd.OutOrStdout(), snap, r)
			return nil
		},
	}
	cluster = addClusterFlags(cmd, true)
	cmd.Flags().StringVar(&nodepools, "nodepools", "", "plan with the NodePools and EC2NodeClasses of this file (Nodesmith's or Karpenter's)")
	_ = cmd.MarkFlagFilename("nodepools", "yaml", "yml", "json")
	cmd.Flags().BoolVar(&pending, "pending", false, "plan only the pending pods, onto existing nodes first, as the provisioner would")
	out = addOutputFlag(cmd, outTable, outTable, outYAML, outJSON)
	return cmd
}

func writePlan(w io.Writer, snap *whatif.Snapshot, r *whatif.PlanResult) {
	what := "every workload pod onto new nodes"
	if r.Mode == whatif.ModePending {
		what = "the pending pods"
	}
	fmt.Fprintf(w, "plan for %s (taken %s): %s, %s\n", sourceName(snap), snap.TakenAt.UTC().Format("2006-01-02T15:04:05Z"), what, plural(r.Pods, "pod"))
	if r.Nominated > 0 {
		fmt.Fprintf(w, "  on existing nodes or launching NodeClaims: %s\n", plural(r.Nominated, "pod"))
	}
	fmt.Fprintln(w, "\nNodesmith would launch")
	if r.New.Nodes == 0 {
		fmt.Fprintln(w, "  nothing")
	} else {
		writeBreakdown(w, "  ", r.New)
		if r.LowerBound > 0 {
			fmt.Fprintf(w, "  lower bound %s/h: no nodes of these pools' types hold these pods for less (plan %+.1f%%)\n",
				dollars(r.LowerBound), 100*(r.New.PerHour/r.LowerBound-1))
		}
	}
	if c := r.Commitments; c != nil {
		fmt.Fprintln(w, "\ncommitments (Savings Plans, Reserved Instances)")
		fmt.Fprintf(w, "  with them:     new nodes %s/h at list price, %s/h of it prepaid, %s/h added\n",
			dollars(c.ListPerHour), dollars(c.CoveredPerHour), dollars(c.AddedPerHour))
		fmt.Fprintf(w, "  ignoring them: new nodes %s/h at list price, %s/h of it prepaid, %s/h added\n",
			dollars(c.IgnoringListPerHour), dollars(c.IgnoringCoveredPerHour), dollars(c.IgnoringAddedPerHour))
	}
	fmt.Fprintln(w, "\nrunning today")
	fmt.Fprintln(w, "  Nodesmith NodeClaims at what they cost now (the nodesmith_cost_dollars_per_hour metric)")
	if r.Nodesmith.Nodes == 0 {
		fmt.Fprintln(w, "    none")
	} else {
		writeBreakdown(w, "    ", r.Nodesmith)
	}
	if r.Other.Nodes > 0 || len(r.Unpriced) > 0 {
		fmt.Fprintln(w, "  other nodes, priced from the catalog by their labels")
		if r.Other.Nodes > 0 {
			writeBreakdown(w, "    ", r.Other)
		}
		if len(r.Unpriced) > 0 {
			fmt.Fprintf(w, "    %s of types the catalog does not price: %s\n", plural(len(r.Unpriced), "node"), list(r.Unpriced, 5))
		}
	}
	fmt.Fprintf(w, "  total %s/h\n", dollars(r.Current()))
	if r.Mode == whatif.ModeRepack && r.Current() > 0 && len(r.Unpriced) == 0 {
		fmt.Fprintf(w, "\nthe plan costs %s/h against %s/h today (%+.1f%%)\n", dollars(r.New.PerHour), dollars(r.Current()),
			100*(r.New.PerHour/r.Current()-1))
	}
	if len(r.Unschedulable) > 0 {
		fmt.Fprintf(w, "\n%s cannot be placed\n", plural(len(r.Unschedulable), "pod"))
		for i, u := range r.Unschedulable {
			if i == 10 {
				fmt.Fprintf(w, "  … %d more (-o yaml lists them all)\n", len(r.Unschedulable)-10)
				break
			}
			fmt.Fprintf(w, "  %s\n", u.Reason)
		}
	}
	if len(r.LeftOut) > 0 {
		fmt.Fprintln(w, "\nNodePools left out")
		for _, n := range r.LeftOut {
			fmt.Fprintf(w, "  %s: %s\n", n.NodePool, n.Reason)
		}
	}
}

func sourceName(s *whatif.Snapshot) string {
	if s.Source == "" {
		return "the snapshot"
	}
	return s.Source
}

func list(items []string, n int) string {
	if len(items) <= n {
		return join(items)
	}
	return fmt.Sprintf("%s … %d more", join(items[:n]), len(items)-n)
}

func join(items []string) string {
	out := ""
	for i, s := range items {
		if i > 0 {
			out += ", "
		}
		out += s
	}
	return out
}
