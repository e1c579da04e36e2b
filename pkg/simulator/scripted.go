package simulator

import (
	"fmt"
	"slices"
	"strings"
	"time"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
	"github.com/nodesmith/nodesmith/pkg/simulator/output"
	"github.com/nodesmith/nodesmith/pkg/simulator/scenario"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// scripted runs one of the scenario's events.
func (s *Sim) scripted(e scenario.Event) {
	switch {
	case e.SendMessages != nil:
		if err := s.queues[e.SendMessages.Queue].send(e.SendMessages.Count); err != nil {
			s.fail(err)
		}
	case e.SpotInterruption != nil:
		s.interrupt(*e.SpotInterruption)
	case e.ICE != nil:
		until := Epoch.Add(s.sc.Duration.Duration + time.Hour)
		if d := e.ICE.Duration.Duration; d > 0 {
			until = s.clock.Now().Add(d)
			s.schedule(until.Sub(Epoch), prioNormal, func() {})
		}
		n := s.forPools(e.ICE.InstanceType, e.ICE.Zone, e.ICE.CapacityType, func(p fakeaws.Pool) {
			s.world.InjectICE(p.InstanceType, p.Zone, p.CapacityType, until)
		})
		s.note("ICE injected into %d pools (%s) until t=%s", n, describeMatch(e.ICE.InstanceType, e.ICE.Zone, e.ICE.CapacityType),
			output.FormatDuration(until.Sub(Epoch)))
	case e.RebalanceRecommendation != nil:
		s.notify(*e.RebalanceRecommendation, "rebalance recommendation", s.world.Rebalance)
	case e.DeleteNodes != nil:
		s.deleteNodes(*e.DeleteNodes)
	case e.NodeCondition != nil:
		s.nodeCondition(*e.NodeCondition)
	case e.AMIRelease != nil:
		ids := s.world.ReleaseImages(e.AMIRelease.Release)
		s.note("AMI release %s published: %d new Amazon images behind the public SSM parameters (%s…); nodes on the old images drift once their node class resolves the new ones",
			e.AMIRelease.Release, len(ids), strings.Join(ids[:min(2, len(ids))], ", "))
	case e.ScaleNodePool != nil:
		s.scaleNodePool(*e.ScaleNodePool)
	case e.PriceChange != nil:
		pc := e.PriceChange
		n := s.forPools(pc.InstanceType, pc.Zone, pc.CapacityType, func(p fakeaws.Pool) {
			s.world.SetPrice(p.InstanceType, p.Zone, p.CapacityType, pc.Price)
		})
		s.bill.repriced(func(b *bill) bool {
			l := b.launch
			return matchType(pc.InstanceType, l.InstanceType) && (pc.Zone == "" || pc.Zone == l.Zone) &&
				(pc.CapacityType == "" || pc.CapacityType == l.CapacityType)
		}, pc.Price)
		// The controller sees the new price at its next spot price refresh.
		s.note("price of %d pools (%s) set to $%.4f/h", n, describeMatch(pc.InstanceType, pc.Zone, pc.CapacityType), pc.Price)
	}
}

// interrupt sends the spot interruption notice to the oldest matching
// running spot instances.
func (s *Sim) interrupt(si scenario.SpotInterruption) {
	s.notify(si, "spot interruption", s.world.Interrupt)
}

// notify sends an EC2 notice to the oldest matching running spot instances.
func (s *Sim) notify(si scenario.SpotInterruption, what string, send func(string) error) {
	var victims []*bill
	for _, b := range s.bill.order {
		l := b.launch
		if b.stopped || l.CapacityType != nsv1.CapacityTypeSpot || !matchType(si.InstanceType, l.InstanceType) ||
			(si.Zone != "" && si.Zone != l.Zone) {
			continue
		}
		victims = append(victims, b)
	}
	slices.SortStableFunc(victims, func(a, b *bill) int { return int(a.launch.LaunchedAt - b.launch.LaunchedAt) })
	if len(victims) == 0 {
		s.note("%s requested but no matching spot instance is running", what)
		return
	}
	for _, b := range victims[:min(max(si.Count, 1), len(victims))] {
		if err := send(b.id); err != nil {
			s.fail(fmt.Errorf("%s for %s: %w", what, b.id, err))
			return
		}
	}
}

// deleteNodes deletes the oldest nodes of a pool, as an operator would with
// kubectl: the controllers take it from there.
func (s *Sim) deleteNodes(d scenario.DeleteNodes) {
	var claims nsv1.NodeClaimList
	if err := s.kube.List(s.ctx, &claims, client.MatchingLabels{nsv1.LabelNodePool: d.Pool}); err != nil {
		s.fail(err)
		return
	}
	var nodes []*nsv1.NodeClaim
	for i := range claims.Items {
		if c := &claims.Items[i]; c.Status.NodeName != "" && c.DeletionTimestamp == nil {
			nodes = append(nodes, c)
		}
	}
	slices.SortStableFunc(nodes, func(a, b *nsv1.NodeClaim) int {
		return a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time)
	})
	n := min(max(d.Count, 1), len(nodes))
	for _, c := range nodes[:n] {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: c.Status.NodeName}}
		if err := s.kube.Delete(s.ctx, node); client.IgnoreNotFound(err) != nil {
			s.fail(fmt.Errorf("deleting node %s: %w", node.Name, err))
			return
		}
		s.note("node %s (%s) deleted by the scenario, as kubectl delete node would", node.Name, c.Name)
	}
	if n == 0 {
		s.note("deleteNodes: pool %s has no registered node", d.Pool)
	}
}

// scaleNodePool sets a static pool's replicas, as kubectl scale does.
func (s *Sim) scaleNodePool(sc scenario.ScaleNodePool) {
	np := &nsv1.NodePool{}
	if err := s.kube.Get(s.ctx, client.ObjectKey{Name: sc.Pool}, np); err != nil {
		s.fail(fmt.Errorf("scaling nodepool %s: %w", sc.Pool, err))
		return
	}
	base := np.DeepCopy()
	np.Spec.Replicas = &sc.Replicas
	if err := s.kube.Patch(s.ctx, np, client.MergeFrom(base)); err != nil {
		s.fail(fmt.Errorf("scaling nodepool %s: %w", sc.Pool, err))
		return
	}
	s.note("nodepool %s scaled to %d replicas by the scenario, as kubectl scale nodepool would", sc.Pool, sc.Replicas)
}

func describeMatch(instanceType, zone, capacityType string) string {
	or := func(v, all string) string {
		if v == "" {
			return all
		}
		return v
	}
	return fmt.Sprintf("%s, %s, %s", or(instanceType, "any type"), or(zone, "any zone"), or(capacityType, "any capacity type"))
}
