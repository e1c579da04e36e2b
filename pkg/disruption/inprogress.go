package disruption

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

// reserveInProgress takes, before anything is planned, the room the pods of
// commands already under way will need when their candidates drain.
//
// A command's candidates keep running their pods until its replacements
// initialize; when they drain, those pods land on the replacements and on
// whatever room the command counted on other nodes. A later plan that sees
// that room as free may hand it to another action's pods too: both
// commands' drains then leave pods pending, the provisioner launches for
// them, and the replacements end up empty — a launch/delete loop in
// miniature. Karpenter's scheduling simulation avoids this by scheduling
// the pods of nodes marked for deletion first; so does this: each
// command's pods (in command order) are placed on its own replacements and
// on the other nodes, launching nothing, and the room they take there is
// no longer offered. Candidates a prespin command holds keep their pods
// and are left out; pods no place fits wait for the provisioner as before.
func (w *working) reserveInProgress() error {
	byCommand := map[string][]*nodeInfo{}
	for _, n := range w.nodes {
		cmd := n.claim.Annotations[nsv1.AnnotationDisruptionCommand]
		if cmd == "" || w.heldCommands[cmd] || len(n.movable) == 0 {
			continue
		}
		byCommand[cmd] = append(byCommand[cmd], n)
	}
	if len(byCommand) == 0 {
		return nil
	}
	replacements := map[string][]string{}
	for _, c := range w.in.Snapshot.NodeClaims {
		if cmd := c.Annotations[nsv1.AnnotationReplacementFor]; cmd != "" && c.DeletionTimestamp.IsZero() {
			name := c.Name
			if c.Status.NodeName != "" {
				if _, ok := w.base[c.Status.NodeName]; ok {
					name = c.Status.NodeName
				}
			}
			replacements[cmd] = append(replacements[cmd], name)
		}
	}
	cmds := make([]string, 0, len(byCommand))
	for cmd := range byCommand {
		cmds = append(cmds, cmd)
	}
	sort.Strings(cmds)
	for _, cmd := range cmds {
		cands := byCommand[cmd]
		skip := map[string]bool{}
		var pods []*corev1.Pod
		for _, n := range cands {
			skip[n.name] = true
			pods = append(pods, n.movable...)
		}
		// The command's own replacements are its pods' first place: offered
		// to them (unlike to every other action, for which they are
		// in-flight room that is not counted on).
		var own []*scheduling.ExistingNode
		for _, name := range replacements[cmd] {
			en, ok := w.base[name]
			if !ok {
				continue
			}
			skip[name] = true
			cp := *en
			cp.MarkedForDeletion = false
			own = append(own, &cp)
		}
		// First onto the command's own replacements, the rest onto the
		// other nodes; nothing is launched.
		if len(own) > 0 {
			w.solves++
			plan, err := scheduling.Solve(scheduling.Input{
				Pods: pods, Nodes: own, DaemonSets: w.in.Snapshot.DaemonSets, Options: w.opts.Solve,
			})
			if err != nil {
				return fmt.Errorf("placing the pods of disruption command %s on its replacements: %w", cmd, err)
			}
			pods = unplaced(pods, plan)
		}
		if len(pods) == 0 {
			continue
		}
		w.solves++
		plan, err := scheduling.Solve(scheduling.Input{
			Pods: pods, Nodes: w.existing(skip), DaemonSets: w.in.Snapshot.DaemonSets, Options: w.opts.Solve,
		})
		if err != nil {
			return fmt.Errorf("placing the pods of disruption command %s: %w", cmd, err)
		}
		for _, nom := range plan.Nominations {
			w.takeRoom(nom.Node, nom.Pod, false)
		}
	}
	return nil
}

// unplaced are the pods the plan nominated to no node.
func unplaced(pods []*corev1.Pod, plan *scheduling.Plan) []*corev1.Pod {
	placed := make(map[*corev1.Pod]bool, len(plan.Nominations))
	for _, nom := range plan.Nominations {
		placed[nom.Pod] = true
	}
	var out []*corev1.Pod
	for _, p := range pods {
		if !placed[p] {
			out = append(out, p)
		}
	}
	return out
}

// takeRoom records pod as running on the base node named: later solves see
// the room it takes as used, and moving the node's pods moves it too.
// received says an action of this plan moved it there (that node is then
// only deleted in this plan, not replaced: see nodeInfo.received); the
// pods of a command already under way are not such a move.
func (w *working) takeRoom(node string, pod *corev1.Pod, received bool) {
	en, ok := w.base[node]
	if !ok {
		return
	}
	cp := *en
	cp.Pods = append(append(make([]*corev1.Pod, 0, len(en.Pods)+1), en.Pods...), pod)
	w.base[node] = &cp
	if c, ok := w.compactCache[node]; ok {
		w.compactCache[node] = w.compactedPlus(c, pod)
	}
	if n := w.byNode[node]; n != nil {
		n.received = n.received || received
		// Copies: the slices may be the snapshot's.
		n.pods = append(append(make([]*corev1.Pod, 0, len(n.pods)+1), n.pods...), pod)
		n.movable = append(append(make([]*corev1.Pod, 0, len(n.movable)+1), n.movable...), pod)
	}
}
