package whatif

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

// Options shape every answer.
type Options struct {
	// Specs are the instance types to plan with; nil means the embedded
	// us-east-1 snapshot (catalog.Specs).
	Specs []catalog.Spec
	// Region labels the nodes and prices nothing: the embedded snapshot
	// has us-east-1 prices. Default us-east-1.
	Region string
	// Zones are used for node classes whose subnets are not resolved in
	// the snapshot; default the catalog's (us-east-1a…f).
	Zones []string
	// Solve tunes the solver; MaxOptionsPerClaim defaults to the
	// controller's (provisioning.DefaultMaxOptionsPerClaim).
	Solve scheduling.Options
	// NodeRepair plans as a controller with the NodeRepair feature gate
	// on: nodes unhealthy past their toleration are replaced.
	NodeRepair bool
}

// PoolNote says why a pool is left out of a plan.
type PoolNote struct {
	NodePool string `json:"nodePool"`
	Reason   string `json:"reason"`
}

// world is one snapshot's view with instance types built per node class.
type world struct {
	snap    *Snapshot
	idx     *provisioning.Snapshot
	opts    Options
	specs   []catalog.Spec
	classes map[string]*awsv1.EC2NodeClass
	types   map[string][]*catalog.InstanceType // by node class
}

func newWorld(snap *Snapshot, opts Options) (*world, error) {
	if opts.Specs == nil {
		specs, err := catalog.Specs()
		if err != nil {
			return nil, fmt.Errorf("loading the embedded instance catalog: %w", err)
		}
		opts.Specs = specs
	}
	opts.Solve = provisioning.SolveOptions(opts.Solve)
	w := &world{snap: snap, idx: snap.Index(), opts: opts, specs: opts.Specs,
		classes: map[string]*awsv1.EC2NodeClass{}, types: map[string][]*catalog.InstanceType{}}
	for i := range snap.EC2NodeClasses {
		w.classes[snap.EC2NodeClasses[i].Name] = &snap.EC2NodeClasses[i]
	}
	return w, nil
}

// poolTypes returns the instance types of every usable pool whose node
// class is known, and notes why the others are left out.
func (w *world) poolTypes() (map[string][]*catalog.InstanceType, []PoolNote) {
	out := map[string][]*catalog.InstanceType{}
	var notes []PoolNote
	usable := map[string]bool{}
	for _, np := range provisioning.UsablePools(w.idx) {
		usable[np.Name] = true
		its, why := w.typesFor(np)
		if why != "" {
			notes = append(notes, PoolNote{NodePool: np.Name, Reason: why})
			continue
		}
		out[np.Name] = its
	}
	for _, np := range w.idx.NodePools {
		switch {
		case usable[np.Name]:
		case !np.DeletionTimestamp.IsZero():
			notes = append(notes, PoolNote{NodePool: np.Name, Reason: "being deleted"})
		default:
			notes = append(notes, PoolNote{NodePool: np.Name, Reason: "not Ready: " + readyMessage(np)})
		}
	}
	sort.Slice(notes, func(i, j int) bool { return notes[i].NodePool < notes[j].NodePool })
	return out, notes
}

func readyMessage(np *nsv1.NodePool) string {
	for _, c := range np.Status.Conditions {
		if c.Type == nsv1.ConditionReady {
			return strings.TrimSpace(c.Reason + " " + c.Message)
		}
	}
	return ""
}

// typesFor builds a pool's instance types as the AWS provider does for its
// EC2NodeClass, from the catalog: offerings in the zones of the class's
// resolved subnets, allocatable from its kubelet settings and root volume,
// the snapshot's unavailable offerings marked.
func (w *world) typesFor(np *nsv1.NodePool) ([]*catalog.InstanceType, string) {
	ref := np.Spec.Template.Spec.NodeClassRef
	if ref == nil || ref.Group != awsv1.Group || ref.Kind != "EC2NodeClass" {
		return nil, "its nodeClassRef names no aws.nodesmith.sh EC2NodeClass"
	}
	if its, ok := w.types[ref.Name]; ok {
		return its, ""
	}
	nc := w.classes[ref.Name]
	if nc == nil {
		return nil, fmt.Sprintf("EC2NodeClass %s is not in the snapshot", ref.Name)
	}
	kubelet, err := catalog.KubeletSettingsFrom(nc.Spec.Kubelet)
	if err != nil {
		return nil, fmt.Sprintf("EC2NodeClass %s: kubelet settings: %v", ref.Name, err)
	}
	zones := w.opts.Zones
	if len(nc.Status.Subnets) > 0 {
		set := map[string]bool{}
		zones = nil
		for _, s := range nc.Status.Subnets {
			if !set[s.Zone] {
				set[s.Zone] = true
				zones = append(zones, s.Zone)
			}
		}
		sort.Strings(zones)
	}
	opts := catalog.Options{Region: w.opts.Region, Zones: zones, Kubelet: kubelet, EphemeralStorage: rootVolumeSize(nc)}
	its := catalog.FromSpecs(w.specs, opts).Types()
	if len(w.snap.UnavailableOfferings) > 0 {
		for i, it := range its {
			its[i] = w.withUnavailable(it)
		}
	}
	// The class's capacity reservations, as its status last read them: the
	// provider offers the same (pkg/providers/aws catalogReservations).
	its = catalog.WithReservations(its, catalog.ReservationsFromStatus(nc.Status.CapacityReservations, zones), w.snap.TakenAt.Time)
	// The cluster's NodeOverlays, through the same rule the controller's
	// instance types pass (pkg/cloudprovider/overlay).
	overlays, _ := catalog.OverlaysFrom(w.snap.NodeOverlays)
	its, _ = catalog.ApplyOverlays(its, overlays)
	w.types[ref.Name] = its
	return its, ""
}

func (w *world) withUnavailable(it *catalog.InstanceType) *catalog.InstanceType {
	changed := false
	offs := make(catalog.Offerings, len(it.Offerings))
	copy(offs, it.Offerings)
	for i, o := range offs {
		for _, u := range w.snap.UnavailableOfferings {
			if o.Available && u.matches(it.Name, o.Zone, o.CapacityType) {
				offs[i].Available, changed = false, true
			}
		}
	}
	if !changed {
		return it
	}
	return it.WithOfferings(offs)
}

// rootVolumeSize is the ephemeral storage of the class's nodes: its root
// volume (or /dev/xvda), else 20Gi, the provider's default for AL2023 and
// Bottlerocket alike (pkg/providers/aws.rootVolumeSize).
func rootVolumeSize(nc *awsv1.EC2NodeClass) resource.Quantity {
	bds := nc.Spec.BlockDeviceMappings
	for _, bd := range bds {
		if bd.RootVolume && bd.EBS != nil && bd.EBS.VolumeSize != nil {
			return bd.EBS.VolumeSize.DeepCopy()
		}
	}
	for _, bd := range bds {
		if bd.EBS != nil && bd.EBS.VolumeSize != nil && bd.DeviceName != nil && strings.HasSuffix(*bd.DeviceName, "xvda") {
			return bd.EBS.VolumeSize.DeepCopy()
		}
	}
	return resource.MustParse("20Gi")
}

// priceNode prices a node Nodesmith did not launch from its labels and the
// catalog: its instance type at the offering its zone and capacity type
// name (Karpenter's and EKS managed node groups' labels are read too).
func (w *world) priceNode(n *corev1.Node, cat map[string]*catalog.InstanceType) (pool, ct, it string, price float64, ok bool) {
	l := n.Labels
	it = l[corev1.LabelInstanceTypeStable]
	ct = l[nsv1.LabelCapacityType]
	if ct == "" {
		ct = l["karpenter.sh/capacity-type"]
	}
	if ct == "" {
		switch l["eks.amazonaws.com/capacityType"] {
		case "SPOT":
			ct = nsv1.CapacityTypeSpot
		default:
			ct = nsv1.CapacityTypeOnDemand
		}
	}
	switch {
	case l["karpenter.sh/nodepool"] != "":
		pool = "karpenter:" + l["karpenter.sh/nodepool"]
	case l["eks.amazonaws.com/nodegroup"] != "":
		pool = "nodegroup:" + l["eks.amazonaws.com/nodegroup"]
	default:
		pool = "-"
	}
	t := cat[it]
	if t == nil {
		return pool, ct, it, 0, false
	}
	zone := l[corev1.LabelTopologyZone]
	best, anyZone := -1.0, -1.0
	for _, o := range t.Offerings {
		if o.CapacityType != ct {
			continue
		}
		if o.Zone == zone && (best < 0 || o.Price < best) {
			best = o.Price
		}
		if anyZone < 0 || o.Price < anyZone {
			anyZone = o.Price
		}
	}
	if best < 0 {
		// The catalog's zone rule may not offer the type in the node's
		// zone; the node exists, so price it as the type's cheapest.
		best = anyZone
	}
	if best < 0 {
		return pool, ct, it, 0, false
	}
	return pool, ct, it, best, true
}
