package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nodesmith/nodesmith/pkg/whatif"
)

func newExplainCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "explain",
		Short: "Why a pod is pending or placed; where a node stands on removal",
		Long: `explain answers the two questions asked most of a node provisioner, in the
words of Nodesmith's own decision code, from a cluster (through your
kubeconfig) or a file written by nodesmith snapshot.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newExplainPodCommand(), newExplainNodeCommand())
	return cmd
}

func newExplainPodCommand() *cobra.Command {
	var (
		out       *outputFlag
		cluster   *clusterFlags
		namespace string
		types     int
	)
	cmd := &cobra.Command{
		Use:   "pod [NAMESPACE/]NAME",
		Short: "Why a pod is pending, or where Nodesmith would place it",
		Long: `explain pod runs the provisioner's gather and solver for a pending pod and
prints, in the solver's own words:

  - the outcome: the existing node or launching NodeClaim it fits on, the new
    NodeClaim Nodesmith would launch for it (pool, cheapest type, zone,
    capacity type, price), or why it cannot be placed;
  - per NodePool, in the order Nodesmith tries them: the requirement, taint,
    limit or resource that rules the pool out, or the instance types that
    remain, cheapest first;
  - per existing node, why it cannot take the pod.

A pod the provisioner does not plan yet (kube-scheduler has not marked it
Unschedulable, and it is younger than 2 s) is explained as if it were. For a
bound pod, the node it is on.`,
		Example: `  nodesmith explain pod default/web-7d4b9c
  nodesmith explain pod -n batch worker-0 --snapshot cluster.yaml
  nodesmith explain pod default/web-7d4b9c -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.check(); err != nil {
				return err
			}
			ns, name := namespace, args[0]
			if before, after, ok := strings.Cut(args[0], "/"); ok {
				ns, name = before, after
			}
			snap, err := cluster.load(cmd.Context(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			r, err := whatif.ExplainPod(snap, ns, name, whatif.Options{})
			if err != nil {
				return err
			}
			if out.value != outTable {
				return writeData(cmd.OutOrStdout(), out.value, r)
			}
			writePodReport(cmd.OutOrStdout(), r, types)
			return nil
		},
	}
	cluster = addClusterFlags(cmd, true)
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "default", "namespace of the pod when NAME has none")
	cmd.Flags().IntVar(&types, "types", 5, "instance types to list per NodePool (-o json lists them all)")
	out = addOutputFlag(cmd, outTable, outTable, outYAML, outJSON)
	return cmd
}

func newExplainNodeCommand() *cobra.Command {
	var (
		out        *outputFlag
		cluster    *clusterFlags
		nodeRepair bool
	)
	cmd := &cobra.Command{
		Use:   "node NAME",
		Short: "Whether a node would be disrupted now, why not, and the budgets that hold it",
		Long: `explain node prints what runs on a node (workload, DaemonSet, static and
finished pods, and pods that block disruption with nodesmith.sh/do-not-disrupt),
the disruption planner's verdict at the time of the snapshot, and its pool's
disruption budgets: which are active and how many nodes they let go.

The verdict is the controller's own planner run over the snapshot: the action
that would disrupt the node (emptiness, drift, expiration, multi- or
single-node consolidation, with its savings), or why the node is left (its
skip reason: a budget, consolidateAfter, do-not-disrupt pods, a
PodDisruptionBudget, pods with nowhere to go, no cheaper replacement...).
Nodes no NodeClaim backs are never disrupted.

A node whose Ready condition (or a condition the EKS node monitoring agent
sets) is unhealthy gets a note saying since when and when node repair would
replace it; --node-repair plans as a controller running with the NodeRepair
feature gate (off by default, as in Karpenter), so the verdict is the repair.`,
		Example: `  nodesmith explain node ip-10-0-12-34.ec2.internal
  nodesmith explain node ip-10-0-12-34.ec2.internal --snapshot cluster.yaml -o yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.check(); err != nil {
				return err
			}
			snap, err := cluster.load(cmd.Context(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			r, err := whatif.ExplainNode(snap, args[0], whatif.Options{NodeRepair: nodeRepair})
			if err != nil {
				return err
			}
			if out.value != outTable {
				return writeData(cmd.OutOrStdout(), out.value, r)
			}
			writeNodeReport(cmd.OutOrStdout(), r)
			return nil
		},
	}
	cluster = addClusterFlags(cmd, true)
	cmd.Flags().BoolVar(&nodeRepair, "node-repair", false, "plan as a controller with the NodeRepair feature gate on (replace nodes unhealthy past their toleration)")
	out = addOutputFlag(cmd, outTable, outTable, outYAML, outJSON)
	return cmd
}

// maxNodeLines bounds the per-node lines of explain pod; past it the nodes
// are counted by reason.
const maxNodeLines = 20

func writePodReport(w io.Writer, r *whatif.PodReport, types int) {
	fmt.Fprintf(w, "pod %s (%s)\n", r.Pod, r.Phase)
	if r.Bound != nil {
		fmt.Fprintf(w, "  bound to node %s%s: kube-scheduler placed it; Nodesmith does not plan bound pods\n", r.Bound.Node, nodeFactsText(*r.Bound))
		return
	}
	switch {
	case r.VolumesNotReady != "":
		fmt.Fprintf(w, "  held back by its volumes: %s; the provisioner launches nothing for it until they are ready\n", r.VolumesNotReady)
		return
	case r.Provisionable && r.Unjudged:
		fmt.Fprintln(w, "  pending: kube-scheduler has not judged it 2 s after its creation, so the provisioner plans it without a verdict")
	case r.Provisionable:
		fmt.Fprintln(w, "  pending: kube-scheduler found no node for it, so the provisioner plans it")
	default:
		fmt.Fprintf(w, "  not planned by the provisioner today (%s); explained as if it were\n", r.NotProvisionable)
	}
	if len(r.VolumeZones) > 0 {
		fmt.Fprintf(w, "  zone: %s, from its volumes (%s)\n", strings.Join(r.VolumeZones, ", "), r.VolumeSource)
	}
	switch {
	case r.Nominated != "":
		fmt.Fprintf(w, "  outcome: fits on %s, which has room for it now\n", r.Nominated)
	case r.Claim != nil:
		c := r.Claim
		fmt.Fprintf(w, "  outcome: a new NodeClaim of pool %s: %s %s in %s at %s/h (%s, %s)\n",
			c.NodePool, c.InstanceType, c.CapacityType, c.Zone, dollars(c.PerHour), plural(c.Pods, "pod"), plural(c.Options, "launch option"))
		if c.PricedBy != "" {
			fmt.Fprintf(w, "  price: set by NodeOverlay %s\n", c.PricedBy)
		}
	default:
		fmt.Fprintf(w, "  outcome: %s\n", r.Unschedulable)
	}
	fmt.Fprintln(w, "\nNodePools, in the order Nodesmith tries them")
	if len(r.Pools) == 0 && len(r.LeftOut) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for _, p := range r.Pools {
		if p.Fits {
			fmt.Fprintf(w, "  %s (weight %d): fits, %d instance types: %s\n", p.NodePool, p.Weight, len(p.InstanceTypes), typeList(p.InstanceTypes, types))
			if p.Relaxed != "" {
				fmt.Fprintf(w, "    (%s)\n", p.Relaxed)
			}
		} else {
			fmt.Fprintf(w, "  %s (weight %d): ruled out: %s\n", p.NodePool, p.Weight, strings.TrimPrefix(p.Reason, fmt.Sprintf("pool %q: ", p.NodePool)))
		}
		for _, b := range p.Blocked {
			fmt.Fprintf(w, "    while packing: %s\n", strings.TrimPrefix(b, fmt.Sprintf("pool %q: ", p.NodePool)))
		}
	}
	for _, n := range r.LeftOut {
		fmt.Fprintf(w, "  %s: left out: %s\n", n.NodePool, n.Reason)
	}
	if len(r.Notes) > 0 {
		fmt.Fprintln(w, "\ntopology")
		for _, n := range r.Notes {
			fmt.Fprintf(w, "  %s\n", n)
		}
	}
	if len(r.Nodes) > 0 {
		fmt.Fprintln(w, "\nexisting nodes, before the other pending pods take their room")
		writeNodeFits(w, r.Nodes)
	}
}

func writeNodeFits(w io.Writer, nodes []whatif.NodeFit) {
	if len(nodes) > maxNodeLines {
		counts := map[string]int{}
		var order []string
		for _, n := range nodes {
			why := n.Reason
			if n.Fits {
				why = "has room"
			} else if i := strings.Index(why, " but "); i > 0 && strings.HasPrefix(why, "needs ") {
				why = "not enough free " + lastWord(why[:i])
			}
			if counts[why] == 0 {
				order = append(order, why)
			}
			counts[why]++
		}
		for _, why := range order {
			fmt.Fprintf(w, "  %d: %s\n", counts[why], why)
		}
		return
	}
	tabulate(w, func(tw io.Writer) {
		for _, n := range nodes {
			name := n.Node
			if n.InFlight {
				name += " (launching)"
			}
			verdict := "no"
			if n.Fits {
				verdict = "room"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", name, verdict, n.Reason)
		}
	})
}

func lastWord(s string) string { return s[strings.LastIndex(s, " ")+1:] }

func typeList(ts []whatif.TypeOption, n int) string {
	var parts []string
	for i, t := range ts {
		if i == n {
			parts = append(parts, fmt.Sprintf("… %d more", len(ts)-n))
			break
		}
		parts = append(parts, fmt.Sprintf("%s %s", t.Name, dollars(t.PerHour)))
	}
	return strings.Join(parts, ", ")
}

func nodeFactsText(f whatif.NodeFacts) string {
	var parts []string
	if f.NodeClaim != "" {
		parts = append(parts, "NodeClaim "+f.NodeClaim)
	}
	if f.NodePool != "" {
		parts = append(parts, "pool "+f.NodePool)
	}
	if t := strings.TrimSpace(strings.Join([]string{f.InstanceType, f.CapacityType, f.Zone}, " ")); t != "" {
		parts = append(parts, strings.Join(strings.Fields(t), " "))
	}
	if f.PerHour != nil {
		parts = append(parts, dollars(*f.PerHour)+"/h")
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func writeNodeReport(w io.Writer, r *whatif.NodeReport) {
	fmt.Fprintf(w, "node %s%s\n", r.Node, nodeFactsText(r.NodeFacts))
	kinds := map[string]int{}
	for _, p := range r.Pods {
		kinds[p.Kind]++
	}
	fmt.Fprintf(w, "  pods: %d workload, %d daemonset, %d static, %d finished\n", kinds["workload"], kinds["daemonset"], kinds["static"], kinds["finished"])
	tabulate(w, func(tw io.Writer) {
		for _, p := range r.Pods {
			extra := ""
			if p.DoNotDisrupt != "" {
				extra = "blocks disruption: " + p.DoNotDisrupt
			}
			fmt.Fprintf(tw, "    %s\t%s\t%s\n", p.Pod, p.Kind, extra)
		}
	})
	if len(r.Checks) > 0 {
		fmt.Fprintln(w, "\ndisruption")
		tabulate(w, func(tw io.Writer) {
			fmt.Fprintln(tw, "  ACTION\tCANDIDATE\tBUDGET ALLOWS\tWHY")
			for _, c := range r.Checks {
				yes, allowed := "no", "-"
				method := c.Method
				if c.Candidate {
					yes = fmt.Sprintf("yes, saves $%.4f/h", c.Savings)
				} else if c.Skip != "" {
					method = "skipped: " + c.Skip
				}
				if c.Allowed != nil {
					allowed = fmt.Sprint(*c.Allowed)
				}
				if c.Forced {
					allowed = "forced: not held"
				}
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", method, yes, allowed, c.Reason)
			}
		})
	}
	if len(r.Budgets) > 0 {
		fmt.Fprintf(w, "\nbudgets of pool %s (%s, %d being disrupted)\n", r.NodePool, plural(r.PoolNodes, "node"), r.Disrupting)
		tabulate(w, func(tw io.Writer) {
			fmt.Fprintln(tw, "  NODES\tSCHEDULE\tDURATION\tREASONS\tACTIVE\tALLOWS")
			for _, b := range r.Budgets {
				reasons := "all"
				if len(b.Reasons) > 0 {
					reasons = strings.Join(b.Reasons, ",")
				}
				active := "no"
				if b.Active {
					active = "yes"
				}
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%d\n", b.Nodes, orDash(b.Schedule), orDash(b.Duration), reasons, active, b.Allows)
			}
		})
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "\nnote: %s\n", n)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
