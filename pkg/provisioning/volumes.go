package provisioning

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// Storage is the storage objects volume topology reads, indexed: claims by
// namespace/name, volumes and classes by name. A nil *Storage holds none.
type Storage struct {
	claims  map[string]*corev1.PersistentVolumeClaim
	volumes map[string]*corev1.PersistentVolume
	classes map[string]*storagev1.StorageClass
	// the lists as given, for Snapshot.Version
	claimList  []*corev1.PersistentVolumeClaim
	volumeList []*corev1.PersistentVolume
	classList  []*storagev1.StorageClass
}

// NewStorage indexes listed PVCs, PVs and StorageClasses.
func NewStorage(claims []*corev1.PersistentVolumeClaim, volumes []*corev1.PersistentVolume, classes []*storagev1.StorageClass) *Storage {
	s := &Storage{
		claims:    make(map[string]*corev1.PersistentVolumeClaim, len(claims)),
		volumes:   make(map[string]*corev1.PersistentVolume, len(volumes)),
		classes:   make(map[string]*storagev1.StorageClass, len(classes)),
		claimList: claims, volumeList: volumes, classList: classes,
	}
	for _, c := range claims {
		s.claims[c.Namespace+"/"+c.Name] = c
	}
	for _, v := range volumes {
		s.volumes[v.Name] = v
	}
	for _, c := range classes {
		s.classes[c.Name] = c
	}
	return s
}

func (s *Storage) claim(namespace, name string) *corev1.PersistentVolumeClaim {
	if s == nil {
		return nil
	}
	return s.claims[namespace+"/"+name]
}

func (s *Storage) volume(name string) *corev1.PersistentVolume {
	if s == nil {
		return nil
	}
	return s.volumes[name]
}

func (s *Storage) class(name string) *storagev1.StorageClass {
	if s == nil {
		return nil
	}
	return s.classes[name]
}

// zoneKeys are the labels storage pins a zone or region with, mapped to the
// keys our nodes carry: the EBS CSI driver writes its own zone key into the
// PVs it provisions and in-tree volumes the deprecated beta keys, and a new
// node has only the standard labels until the driver's node plugin starts.
var zoneKeys = map[string]string{
	"topology.ebs.csi.aws.com/zone":     corev1.LabelTopologyZone,
	corev1.LabelFailureDomainBetaZone:   corev1.LabelTopologyZone,
	corev1.LabelFailureDomainBetaRegion: corev1.LabelTopologyRegion,
	corev1.LabelTopologyZone:            corev1.LabelTopologyZone,
	corev1.LabelTopologyRegion:          corev1.LabelTopologyRegion,
}

// VolumeTopology is where a pod's volumes let it run.
type VolumeTopology struct {
	// Terms are OR-ed alternatives, each a list of node requirements that
	// must all hold; nil when no volume restricts the pod.
	Terms [][]corev1.NodeSelectorRequirement
	// Sources name the objects the terms come from, e.g.
	// "PersistentVolume pv-1 (claim data)"; explain quotes them.
	Sources []string
}

// VolumeRequirements is the rule, in one place, for where a pod's
// persistent volumes let it run (Karpenter's volume topology): for every
// volume that is a PersistentVolumeClaim, or a generic ephemeral volume
// (whose claim is named <pod>-<volume>):
//   - a bound claim: its PersistentVolume's required node affinity (a local
//     or hostPath volume's hostname term dropped: the pod is moving to a
//     new node anyway);
//   - an unbound claim whose StorageClass binds WaitForFirstConsumer: the
//     class's allowedTopologies (none: the volume is made where the pod
//     lands);
//   - an ephemeral volume of a pod already bound to a node: nothing, its
//     claim is made anew when the pod is.
//
// Volumes' alternatives are AND-ed across volumes (every combination of one
// term per volume). EBS CSI and beta zone keys become
// topology.kubernetes.io/zone (zoneKeys).
//
// The error says why the pod must not be planned now: its claim or the
// claim's StorageClass or PersistentVolume does not exist, the claim is
// being deleted or lost, or it is unbound and binds Immediately (the
// volume is made first, and then pins the pod), or unbound with no class.
func VolumeRequirements(st *Storage, pod *corev1.Pod) (VolumeTopology, error) {
	var out VolumeTopology
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		var claimName string
		switch {
		case v.PersistentVolumeClaim != nil:
			claimName = v.PersistentVolumeClaim.ClaimName
		case v.Ephemeral != nil:
			if pod.Spec.NodeName != "" {
				continue
			}
			claimName = pod.Name + "-" + v.Name
		default:
			continue
		}
		terms, source, err := claimTerms(st, pod.Namespace, claimName)
		if err != nil {
			return VolumeTopology{}, fmt.Errorf("volume %s: %w", v.Name, err)
		}
		if terms == nil {
			continue
		}
		out.Sources = append(out.Sources, source)
		out.Terms = andTerms(out.Terms, terms)
	}
	return out, nil
}

// claimTerms is one claim's alternatives (nil: unrestricted) and where they
// came from.
func claimTerms(st *Storage, namespace, name string) ([][]corev1.NodeSelectorRequirement, string, error) {
	pvc := st.claim(namespace, name)
	switch {
	case pvc == nil:
		return nil, "", fmt.Errorf("PersistentVolumeClaim %s/%s does not exist", namespace, name)
	case !pvc.DeletionTimestamp.IsZero():
		return nil, "", fmt.Errorf("PersistentVolumeClaim %s/%s is being deleted", namespace, name)
	case pvc.Status.Phase == corev1.ClaimLost:
		return nil, "", fmt.Errorf("PersistentVolumeClaim %s/%s is Lost (its PersistentVolume %q is gone)", namespace, name, pvc.Spec.VolumeName)
	}
	if pvName := pvc.Spec.VolumeName; pvName != "" {
		pv := st.volume(pvName)
		if pv == nil {
			return nil, "", fmt.Errorf("PersistentVolumeClaim %s/%s is bound to PersistentVolume %s, which does not exist", namespace, name, pvName)
		}
		if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
			return nil, "", nil
		}
		var terms [][]corev1.NodeSelectorRequirement
		for _, t := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
			var reqs []corev1.NodeSelectorRequirement
			for _, r := range t.MatchExpressions {
				if r.Key == corev1.LabelHostname && (pv.Spec.Local != nil || pv.Spec.HostPath != nil) {
					continue
				}
				reqs = append(reqs, nodeKey(r))
			}
			if len(reqs) == 0 {
				// An alternative left with no requirement (a local
				// volume's hostname dropped) allows every node.
				return nil, "", nil
			}
			terms = append(terms, reqs)
		}
		if len(terms) == 0 {
			return nil, "", nil
		}
		return terms, fmt.Sprintf("PersistentVolume %s (claim %s)", pvName, name), nil
	}
	className := ""
	if pvc.Spec.StorageClassName != nil {
		className = *pvc.Spec.StorageClassName
	}
	if className == "" {
		return nil, "", fmt.Errorf("PersistentVolumeClaim %s/%s is unbound and names no StorageClass: it waits for a PersistentVolume to be bound to it", namespace, name)
	}
	sc := st.class(className)
	if sc == nil {
		return nil, "", fmt.Errorf("PersistentVolumeClaim %s/%s names StorageClass %s, which does not exist", namespace, name, className)
	}
	if sc.VolumeBindingMode == nil || *sc.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
		return nil, "", fmt.Errorf("PersistentVolumeClaim %s/%s is unbound and its StorageClass %s binds Immediately: the pod waits for its volume to be provisioned and bound", namespace, name, className)
	}
	var terms [][]corev1.NodeSelectorRequirement
	for _, t := range sc.AllowedTopologies {
		var reqs []corev1.NodeSelectorRequirement
		for _, e := range t.MatchLabelExpressions {
			reqs = append(reqs, nodeKey(corev1.NodeSelectorRequirement{Key: e.Key, Operator: corev1.NodeSelectorOpIn, Values: e.Values}))
		}
		if len(reqs) == 0 {
			return nil, "", nil
		}
		terms = append(terms, reqs)
	}
	if len(terms) == 0 {
		return nil, "", nil
	}
	return terms, fmt.Sprintf("StorageClass %s allowedTopologies (claim %s)", className, name), nil
}

// nodeKey maps a storage topology key to the node label it stands for.
func nodeKey(r corev1.NodeSelectorRequirement) corev1.NodeSelectorRequirement {
	if k := zoneKeys[r.Key]; k != "" {
		r.Key = k
	}
	r.Values = append([]string(nil), r.Values...)
	return r
}

// andTerms is every combination of one term of a and one of b (a nil a is
// no restriction yet).
func andTerms(a, b [][]corev1.NodeSelectorRequirement) [][]corev1.NodeSelectorRequirement {
	if a == nil {
		return b
	}
	out := make([][]corev1.NodeSelectorRequirement, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			out = append(out, append(append([]corev1.NodeSelectorRequirement(nil), x...), y...))
		}
	}
	return out
}

// WithVolumeTopology is pod as the solver must see it: its required node
// affinity AND-ed with the volume terms (every pod term combined with
// every volume term). The pod itself when the volumes do not restrict it,
// a copy otherwise: the snapshot's objects are never changed.
//
// Known limit: the solver then reads the volume's zone as the pod's own
// node affinity everywhere, also where a topology spread with
// nodeAffinityPolicy Honor picks the pod's domains; kube-scheduler counts
// a spreading pod's domains without its volumes. A zone-spread group whose
// pods' volumes together cover fewer zones than the pool offers may be
// judged on fewer domains than kube-scheduler sees.
func WithVolumeTopology(pod *corev1.Pod, vt VolumeTopology) *corev1.Pod {
	if vt.Terms == nil {
		return pod
	}
	out := pod.DeepCopy()
	if out.Spec.Affinity == nil {
		out.Spec.Affinity = &corev1.Affinity{}
	}
	if out.Spec.Affinity.NodeAffinity == nil {
		out.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := out.Spec.Affinity.NodeAffinity
	var podTerms []corev1.NodeSelectorTerm
	if na.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		podTerms = na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		if len(podTerms) == 0 {
			return out // matches no node already
		}
	} else {
		podTerms = []corev1.NodeSelectorTerm{{}}
	}
	var terms []corev1.NodeSelectorTerm
	for _, pt := range podTerms {
		for _, vt := range vt.Terms {
			t := *pt.DeepCopy()
			t.MatchExpressions = append(t.MatchExpressions, vt...)
			terms = append(terms, t)
		}
	}
	na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: terms}
	return out
}

// VolumeZones are the zones a pod's volumes allow, sorted, and where the
// restriction came from; no zones when some alternative leaves the zone
// free. explain's account of a zone pinned by storage.
func VolumeZones(vt VolumeTopology) ([]string, string) {
	zones := map[string]bool{}
	for _, t := range vt.Terms {
		var in map[string]bool // the term's zones: the intersection of its zone In requirements
		for _, r := range t {
			if r.Key != corev1.LabelTopologyZone || r.Operator != corev1.NodeSelectorOpIn {
				continue
			}
			next := map[string]bool{}
			for _, z := range r.Values {
				if in == nil || in[z] {
					next[z] = true
				}
			}
			in = next
		}
		if in == nil {
			return nil, ""
		}
		for z := range in {
			zones[z] = true
		}
	}
	if len(zones) == 0 {
		return nil, ""
	}
	out := make([]string, 0, len(zones))
	for z := range zones {
		out = append(out, z)
	}
	sort.Strings(out)
	return out, strings.Join(vt.Sources, ", ")
}
